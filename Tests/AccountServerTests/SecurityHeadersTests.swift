//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import NIOCore
import SpeziAccountStore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Sends `request` as is over a new TCP connection to 127.0.0.1:`port` and returns all the
/// server sent until it closed the connection (or 10 s passed).
func rawExchange(port: Int, _ request: [UInt8]) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { return continuation.resume(throwing: POSIXError(.EIO)) }
            defer { close(socket) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0, send(socket, request, request.count, 0) == request.count else {
                return continuation.resume(throwing: POSIXError(.ECONNREFUSED))
            }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = recv(socket, &chunk, chunk.count, 0)
                if count <= 0 { break }
                received += chunk[..<count]
            }
            continuation.resume(returning: String(decoding: received, as: UTF8.self))
        }
    }
}

/// Issue 39, rows 11 and 12: the headers of every answer; malformed requests are 4xx, and what
/// the client sent stays out of error-level log lines.
@Suite("Security headers on every answer; malformed requests answered 4xx and logged without their content")
struct SecurityHeadersTests {
    static let password = "a long admin password"

    private func expectHeaders(_ headers: HTTPFields, _ what: String) {
        #expect(headers[.cacheControl] == "no-store", "\(what)")
        #expect(headers[.xContentTypeOptions] == "nosniff", "\(what)")
        #expect(headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true, "\(what)")
        #expect(headers[.init("X-Frame-Options")!] == "DENY", "\(what)")
        #expect(headers[.init("Referrer-Policy")!] == "no-referrer", "\(what)")
    }

    @Test("no-store, nosniff, frame-ancestors 'none', X-Frame-Options and Referrer-Policy on JSON, problem, page, document and 404 answers")
    func everyAnswer() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        try await ServerFixture().withServer(configuration: configuration) { api, _ in
            let basic: HTTPFields = [.authorization: "Basic \(Data("grace:\(Self.password)".utf8).base64EncodedString())"]
            let signup = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
            #expect(signup.status == 201 && signup.token != nil)
            expectHeaders(signup.headers, "signup (a token)")
            #expect(signup.headers[.contentSecurityPolicy] == "default-src 'none'; frame-ancestors 'none'")
            let token = try #require(signup.token)
            let answers: [(String, APIResponse, Int)] = [
                ("details", try await api.send(.get, "/v1/account", token: token), 200),
                ("no session", try await api.send(.get, "/v1/account"), 401),
                ("malformed login", try await api.send(.post, "/v1/sessions", json: "{"), 400),
                ("health", try await api.send(.get, "/health"), 200),
                ("OpenAPI", try await api.send(.get, "/openapi.yaml"), 200),
                ("unknown path", try await api.send(.get, "/nothing/here"), 404),
                ("admin JSON", try await api.send(.get, "/admin/api/log", headers: basic), 200),
                ("admin 401", try await api.send(.get, "/admin/api/log"), 401),
                ("admin 403", try await api.send(.post, "/admin/api/verify", headers: [.origin: "https://evil.example"]), 403),
                ("admin page", try await api.send(.get, "/admin/"), 200)
            ]
            for (what, answer, status) in answers {
                #expect(answer.status == status, "\(what): \(answer.text.prefix(200))")
                expectHeaders(answer.headers, what)
            }
            // The page keeps its own policy (its script by hash), frame-ancestors included.
            let page = try #require(answers.last?.1)
            #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'sha256-") == true)
        }
    }

    @Test("over a socket: a malformed chunk size is 400 (public and admin routes); a 3,000-byte admin id is 404; no error-level log line, no echo")
    func malformedOnTheWire() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("malformed-store-\(UUID().uuidString)")
        let credential = FileManager.default.temporaryDirectory.appendingPathComponent("malformed-admin-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: credential)
        }
        try "grace:\(Self.password)\n".write(to: credential, atomically: true, encoding: .utf8)
        let server = try ServeProcess(store: store, extra: ["--admin-credential-file", credential.path])
        try await server.start()
        let port = try #require(Int(server.base.split(separator: ":").last ?? ""))
        let basic = "Authorization: Basic \(Data("grace:\(Self.password)".utf8).base64EncodedString())\r\n"

        for (path, extra) in [("/v1/sessions", ""), ("/v1/accounts", ""), ("/admin/api/session", "")] {
            let request =
                "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n\(extra)"
                + "Transfer-Encoding: chunked\r\n\r\nZZZ-not-a-size\r\n{\"userId\":\"x\"}\r\n0\r\n\r\n"
            let answer = try await rawExchange(port: port, Array(request.utf8))
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(path): \(answer.prefix(300))")
            #expect(!answer.contains("HTTP/1.1 500"), "\(path): \(answer.prefix(600))")
        }

        let id = "attacker" + String(repeating: "X", count: 2_992)
        let history = "GET /admin/api/accounts/\(id)/history HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(basic)Connection: close\r\n\r\n"
        let answer = try await rawExchange(port: port, Array(history.utf8))
        #expect(answer.hasPrefix("HTTP/1.1 404"), "\(answer.prefix(300))")
        #expect(answer.lowercased().contains("cache-control: no-store") && answer.lowercased().contains("x-content-type-options: nosniff"))

        // Origin and Host on the wire: the same host and port pass, another port does not.
        for (origin, status) in [("http://127.0.0.1:\(port)", "202"), ("http://127.0.0.1:\(port + 1)", "403")] {
            let verify =
                "POST /admin/api/verify HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: \(origin)\r\n\(basic)Content-Length: 0\r\nConnection: close\r\n\r\n"
            let answer = try await rawExchange(port: port, Array(verify.utf8))
            #expect(answer.hasPrefix("HTTP/1.1 \(status)"), "\(origin): \(answer.prefix(300))")
        }

        #expect(await server.terminate() == 0)
        let log = try String(contentsOf: server.errors, encoding: .utf8) + String(contentsOf: server.output, encoding: .utf8)
        #expect(!log.contains("XXXXXXXX"), "the id is echoed in the log:\n\(log.suffix(2_000))")
        #expect(!log.contains("ZZZ-not-a-size"))
        let errors = log.split(separator: "\n").filter { $0.contains(" error ") || $0.contains("[error]") || $0.lowercased().contains("error:") }
        #expect(errors.filter { $0.contains("request failed") }.isEmpty, "\(errors)")
        #expect(log.contains("path parameter too long"), "\(log.suffix(2_000))")
    }
}
