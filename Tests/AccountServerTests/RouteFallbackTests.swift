//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import HTTPTypes
import Testing

@testable import AccountServer

@Suite("What no route answers, and the files the server serves")
struct RouteFallbackTests {
    @Test("a known path with another method is 405 with Allow; an unknown path is 404; both problem details")
    func methodNotAllowed() async throws {
        try await ServerFixture().withServer { api, _ in
            let trace = try await api.send(.trace, "/v1/sessions")
            #expect(trace.status == 405)
            #expect(trace.headers[.allow] == "POST")
            #expect(trace.headers[.contentType] == "application/problem+json")
            #expect(trace.problemType == "urn:spezi-account-store:problem:method-not-allowed")
            #expect(trace.body["detail"] as? String == "it takes POST")
            let account = try await api.send(.put, "/v1/account")
            #expect(account.status == 405 && account.headers[.allow] == "GET, PATCH, DELETE")
            let position = try await api.send(.delete, "/v1/positions/12")
            #expect(position.status == 405 && position.headers[.allow] == "GET")
            let unknown = try await api.send(.get, "/v1/nothing-here")
            #expect(unknown.status == 404)
            #expect(unknown.headers[.contentType] == "application/problem+json")
            #expect(unknown.problemType == "urn:spezi-account-store:problem:not-found")
            #expect(unknown.headers[.cacheControl] == "no-store")
        }
    }

    @Test("without an admin credential the console's routes answer 404 admin-console-off")
    func consoleOff() async throws {
        try await ServerFixture().withServer { api, _ in
            for (method, path) in [(HTTPRequest.Method.get, "/admin/"), (.get, "/admin/api/whoami"), (.post, "/admin/api/verify")] {
                let answer = try await api.send(method, path)
                #expect(answer.status == 404, "\(path)")
                #expect(answer.headers[.contentType] == "application/problem+json", "\(path)")
                #expect(answer.problemType == "urn:spezi-account-store:problem:admin-console-off", "\(path)")
            }
            let trace = try await api.send(.trace, "/admin/api/log")
            #expect(trace.status == 405 && trace.headers[.allow] == "GET")
        }
    }

    @Test("a position past 2^63 - 1 is 400, as the document's int64 says")
    func positionRange() async throws {
        try await ServerFixture().withServer { api, _ in
            let (token, _) = try await api.signup("ada@example.org")
            #expect(try await api.send(.get, "/v1/positions/9223372036854775807", token: token).status == 202)
            let past = try await api.send(.get, "/v1/positions/9223372036854775808")
            #expect(past.status == 400)
            #expect(past.problemType == "urn:spezi-account-store:problem:malformed-request")
        }
    }

    @Test("the route table's matching: `:name` takes one segment, methods in registration order, none for other paths")
    func matching() {
        let middleware = RouteFallbackMiddleware<ServerRequestContext>(routes: [
            RoutePattern(method: .get, path: "/a/:id/b"), RoutePattern(method: .post, path: "/a/:id/b"),
            RoutePattern(method: .get, path: "/a/:id/b"), RoutePattern(method: .delete, path: "/a")
        ])
        #expect(middleware.methods(for: "/a/42/b") == ["GET", "POST"])
        #expect(middleware.methods(for: "/a/") == ["DELETE"])
        #expect(middleware.methods(for: "/a/42") == [])
        #expect(middleware.methods(for: "/a/42/b/c") == [])
    }

    @Test("one list of routes, both tables' in registration order, feeds the 405 answers and the OpenAPI operations (`:x` as `{x}`)")
    func derivedLists() {
        let patterns = AccountRoutes.operationTable.map(\.pattern) + AdminRoutes.table.map(\.pattern)
        #expect(AccountServer.routePatterns == patterns)
        #expect(AccountServer.operations.map(\.method) == patterns.map(\.method.rawValue))
        #expect(AccountServer.operations.contains { $0 == ("GET", "/admin/api/accounts/{id}/history") })
        #expect(RoutePattern(method: .get, path: "/a/:first/b/:second").openAPIPath == "/a/{first}/b/{second}")
        #expect(RoutePattern(method: .get, path: "/admin/").openAPIPath == "/admin/")
        let middleware = RouteFallbackMiddleware<ServerRequestContext>(routes: AccountServer.routePatterns)
        #expect(middleware.methods(for: "/v1/account") == ["GET", "PATCH", "DELETE"])
        #expect(middleware.methods(for: "/admin/api/session") == ["POST", "DELETE"])
    }

    @Test("a file missing from the resource bundle is an error naming it and the bundle")
    func missingResource() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("resources-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Console"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let bundle = try #require(Bundle(path: folder.path))
        #expect(throws: ServerResourceError(file: "openapi.yaml", bundle: folder.path)) { try ServerResources(bundle: bundle) }
        try "openapi: 3.0.3\n".write(to: folder.appendingPathComponent("openapi.yaml"), atomically: true, encoding: .utf8)
        try "<html></html>\n".write(to: folder.appendingPathComponent("Console/console.html"), atomically: true, encoding: .utf8)
        try "".write(to: folder.appendingPathComponent("Console/console.css"), atomically: true, encoding: .utf8)
        let error = #expect(throws: ServerResourceError.self) { try ServerResources(bundle: bundle) }
        #expect(error?.file == "Console/console.css")
        #expect(error?.description.contains("Console/console.css is missing or empty in \(folder.path)") == true)
    }

    @Test("the page is the three files of Console/, and its CSP allows the script by the SHA-256 of the bytes served")
    func consolePage() async throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AccountServer/Console")
        let script = try String(contentsOf: folder.appendingPathComponent("console.js"), encoding: .utf8)
        let css = try String(contentsOf: folder.appendingPathComponent("console.css"), encoding: .utf8)
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: "a long enough admin password")
        try await ServerFixture().withServer(configuration: configuration) { api, _ in
            let page = try await api.send(.get, "/admin/")
            #expect(page.status == 200)
            #expect(page.text.contains("<script>\(script)</script>"))
            #expect(page.text.contains("<style>\n\(css)</style>"))
            let hash = Data(SHA256.hash(data: Data(script.utf8))).base64EncodedString()
            #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'sha256-\(hash)'") == true)
            #expect(page.text.components(separatedBy: "<script").count == 2)
        }
    }
}
