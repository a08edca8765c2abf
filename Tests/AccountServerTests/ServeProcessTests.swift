//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import TestSupport
import Testing

/// One `accountctl serve` process on a store, on a port the system picked.
final class ServeProcess {
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("accountctl")

    let process = ChildProcess()
    /// The folder of the process's output files, removed with this object.
    private let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
    let output: URL
    let errors: URL
    private(set) var base = ""

    /// `openFiles`: the process's limit on open descriptors, soft and hard (set by the shell that
    /// starts it).
    init(store: URL, extra: [String] = [], openFiles: Int? = nil) throws {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        output = scratch.appendingPathComponent("out")
        errors = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let arguments = ["serve", "--store", store.path, "--port", "0"] + extra
        if let openFiles {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFiles) && exec \"$0\" \"$@\"", Self.binary.path] + arguments
        } else {
            process.executableURL = Self.binary
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] = "1"
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Starts the process and waits (up to 60 s) for its "serving on" line.
    func start() async throws {
        try process.run()
        for _ in 0..<600 {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("serving on ") }) {
                base = String(line.dropFirst("serving on ".count))
                return
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let log = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        Issue.record("accountctl serve did not start: \(log)")
        throw CancellationError()
    }

    /// Sends SIGTERM and waits (up to 20 s, then SIGKILL and -1) for the exit status. Any other
    /// status than 0 prints the end of the process's error output, for the test's log.
    func terminate() async -> Int32 {
        process.terminate()
        // A graceful shutdown on a loaded machine (the whole suite on two cores) can take a while:
        // up to 60 s before it counts as hung; a slow one is reported.
        let asked = ContinuousClock.now
        for _ in 0..<1_200 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
        if ContinuousClock.now - asked > .seconds(10) {
            print("accountctl serve (\(base)) took \(ContinuousClock.now - asked) to end after SIGTERM")
        }
        let status: Int32
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            status = -1
        } else {
            status = process.terminationStatus
        }
        if status != 0 {
            let log = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            print("accountctl serve (\(base)) ended with \(status) after SIGTERM; the end of its error output:\n\(log.suffix(4_000))")
        }
        return status
    }

    /// One request; the status and the body parsed as a JSON object (empty when it is none).
    /// (AsyncHTTPClient: FoundationNetworking's URLSession never completes a request answered 401
    /// with `WWW-Authenticate: Basic` when no delegate takes the challenge.)
    func send(
        _ method: String, _ path: String, token: String? = nil, json: String? = nil, basic: String? = nil
    ) async throws -> (
        status: Int, body: [String: Any]
    ) {
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let basic { request.headers.add(name: "Authorization", value: "Basic \(Data(basic.utf8).base64EncodedString())") }
        if let json {
            request.body = .bytes(ByteBuffer(string: json))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let data = Data(buffer: try await response.body.collect(upTo: 16 << 20))
        return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    /// A GET whose answer is a JSON array of objects (empty when it is not one).
    func sendList(_ path: String, basic: String) async throws -> [[String: Any]] {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Authorization", value: "Basic \(Data(basic.utf8).base64EncodedString())")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let data = Data(buffer: try await response.body.collect(upTo: 16 << 20))
        return (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] ?? []
    }
}

@Suite("accountctl serve: real processes on one store")
struct ServeProcessTests {
    @Test("two servers on one store: a session opened on one works on the other at once, and a logout on the other ends it on both")
    func twoServersShareSessions() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let first = try ServeProcess(store: store)
        try await first.start()
        let second = try ServeProcess(store: store)
        try await second.start()
        #expect(first.base != second.base)

        let signup = try await first.send(
            "POST", "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
        #expect(signup.status == 201)
        let token = try #require(signup.body["token"] as? String)

        let elsewhere = try await second.send("GET", "/v1/account", token: token)
        #expect(elsewhere.status == 200)
        #expect(((elsewhere.body["details"] as? [String: Any])?["userId"] as? String) == "ada@example.org")

        #expect(try await second.send("DELETE", "/v1/sessions/current", token: token).status == 204)
        #expect(try await first.send("GET", "/v1/account", token: token).status == 401)
        #expect(try await second.send("GET", "/v1/account", token: token).status == 401)

        // SIGTERM: both stop cleanly, and the store holds what they acknowledged.
        #expect(await first.terminate() == 0)
        #expect(await second.terminate() == 0)
        let restarted = try ServeProcess(store: store)
        try await restarted.start()
        let login = try await restarted.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
        #expect(login.status == 201)
        #expect(await restarted.terminate() == 0)
    }

    @Test("password reset tokens go to the outbox file (mode 0600), one JSON line each, and complete the reset")
    func resetOutbox() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: outbox)
        }
        let server = try ServeProcess(store: store, extra: ["--reset-outbox", outbox.path])
        try await server.start()
        _ = try await server.send(
            "POST", "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
        #expect(try await server.send("POST", "/v1/password-resets", json: #"{"userId":"ada@example.org"}"#).status == 202)
        // The request is answered at once and the link written after: wait for the line (30 s at most).
        var lines: [Substring] = []
        for _ in 0..<300 {
            lines = try String(contentsOf: outbox, encoding: .utf8).split(separator: "\n")
            if !lines.isEmpty { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(lines.count == 1)
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: String])
        #expect(entry["userId"] == "ada@example.org")
        let permissions = try FileManager.default.attributesOfItem(atPath: outbox.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let token = try #require(entry["token"])
        let completion = #"{"userId":"ada@example.org","token":"\#(token)","newPassword":"brand new secret 7"}"#
        #expect(try await server.send("POST", "/v1/password-resets/complete", json: completion).status == 204)
        #expect(await server.terminate() == 0)
    }

    @Test("--admin-credential-file: the console API answers the credential from the file; a weak one stops the server with a message")
    func adminCredentialFile() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("admin-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: file)
        }
        try "grace:a long admin password\n".write(to: file, atomically: true, encoding: .utf8)
        let server = try ServeProcess(store: store, extra: ["--admin-credential-file", file.path])
        try await server.start()
        #expect(try await server.send("GET", "/admin/api/whoami").status == 401)
        let whoami = try await server.send("GET", "/admin/api/whoami", basic: "grace:a long admin password")
        #expect(whoami.status == 200 && whoami.body["admin"] as? String == "grace")
        #expect(await server.terminate() == 0)

        try "grace:short\n".write(to: file, atomically: true, encoding: .utf8)
        let refused = try ServeProcess(store: store, extra: ["--admin-credential-file", file.path])
        let process = refused.process
        try process.run()
        // Off the cooperative pool: the server may take a while to start and stop on a loaded machine.
        try await offThePool { process.waitUntilExit() }
        #expect(process.terminationStatus != 0)
        #expect(try String(contentsOf: refused.errors, encoding: .utf8).contains("at least 12 characters"))
    }

    @Test("--signup-outbox: signups answer 202; the outbox gets a token or an already-registered notice; the token signs in")
    func signupOutbox() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: outbox)
        }
        // One file for both kinds of messages.
        let server = try ServeProcess(store: store, extra: ["--signup-outbox", outbox.path, "--reset-outbox", outbox.path])
        try await server.start()
        let signup = #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#
        let first = try await server.send("POST", "/v1/accounts", json: signup)
        #expect(first.status == 202)
        func entries() throws -> [[String: String]] {
            try String(contentsOf: outbox, encoding: .utf8).split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String])
            }
        }
        let confirmation = try #require(try entries().first)
        #expect(confirmation["kind"] == "signup-confirmation" && confirmation["userId"] == "ada@example.org")
        let token = try #require(confirmation["token"])
        let confirmed = try await server.send("POST", "/v1/accounts/confirm", json: #"{"token":"\#(token)"}"#)
        #expect(confirmed.status == 201)

        let again = try await server.send("POST", "/v1/accounts", json: signup)
        #expect(
            again.status == 202 && again.body["status"] as? String == "confirmation-sent" && first.body["status"] as? String == "confirmation-sent")
        #expect(try await server.send("POST", "/v1/password-resets", json: #"{"userId":"ada@example.org"}"#).status == 202)
        // The reset is delivered after its answer (the answer's timing tells nothing): wait for it.
        let delivered = ContinuousClock.now + .seconds(20)
        while try entries().count < 3 && ContinuousClock.now < delivered { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try entries().map { $0["kind"] ?? "" } == ["signup-confirmation", "already-registered", "password-reset"])
        #expect(try await server.send("POST", "/v1/accounts/confirm", json: #"{"token":"\#(token)"}"#).status == 400)
        #expect(await server.terminate() == 0)
    }
}
