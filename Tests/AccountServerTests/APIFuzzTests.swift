//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import TestSupport
import TestTiers
import Testing

@Suite("The OpenAPI document against the running server (schemathesis)", .integration)
struct APIFuzzTests {
    /// schemathesis (PyPI, installed by `Tools/run.sh test`) generates requests for every operation
    /// from the document served at /openapi.yaml, with the bearer token of one account, and runs
    /// every check it has (`--checks all`): no 5xx, only documented statuses, content types and
    /// headers, bodies that match their schemas, schema-valid requests accepted and invalid ones
    /// refused, 405 for undeclared methods, authentication not ignored. Its stateful phase follows
    /// the document's links. Each request comes from a client of its own (the server trusts
    /// the loopback proxy's `X-Forwarded-For`), so that the per-client limits do not answer most
    /// signups 429 and leave what lies behind them untested.
    /// The event stream (it never ends while its session lasts) and the logout (it would end the
    /// fuzzer's session) are left to the other tests.
    /// It runs twice: on a server that signs up at once, and on one that confirms signups
    /// (`--signup-outbox`), whose signups and upgrades answer 202.
    @Test("schemathesis: 600+ generated requests, no server error, every answer as documented", arguments: [false, true])
    func schemathesis(confirmingSignups: Bool) async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-store-\(UUID().uuidString)")
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-outbox-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: outbox)
        }
        let server = try ServeProcess(
            store: store, extra: ["--trusted-proxy", "127.0.0.1"] + (confirmingSignups ? ["--signup-outbox", outbox.path] : []))
        try await server.start()
        var signup = try await server.send(
            "POST", "/v1/accounts", json: #"{"userId":"fuzz@example.org","password":"correct horse battery","name":{"givenName":"Fuzz"}}"#)
        if confirmingSignups {
            #expect(signup.status == 202)
            let line = try #require(try String(contentsOf: outbox, encoding: .utf8).split(separator: "\n").first)
            let confirmation = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])?["token"])
            signup = try await server.send("POST", "/v1/accounts/confirm", json: #"{"token":"\#(confirmation)"}"#)
        }
        let token = try #require(signup.body["token"] as? String)

        let text = try await Self.fuzz(
            server, auth: "[auth.openapi.bearer]\nbearer = \"\(token)\"\n" + Self.tokenOperations,
            ["--exclude-path-regex", "^/admin", "--exclude-path", "/v1/account/events", "--exclude-path", "/v1/sessions/current"])
        Self.expectComplete(text, operations: 12, requests: 600)
        #expect(await server.terminate() == 0)
    }

    /// The stateful phase alone, with no token of its own: every bearer operation it reaches, it
    /// reaches through the document's links (a signup's or an anonymous sign-in's token), and
    /// answers it as documented. (`ignored_auth` is left out here: it takes a token that came from a
    /// link, not from the configuration, for one it generated, and a 2xx with it for a failure.)
    @Test("schemathesis's stateful phase reaches the bearer operations through the document's links")
    func links() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-links-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store, extra: ["--trusted-proxy", "127.0.0.1"])
        try await server.start()
        let (text, answers) = try await Self.fuzzWithAnswers(
            server, auth: Self.tokenOperations,
            [
                "--phases", "stateful", "--exclude-checks", "ignored_auth",
                "--exclude-path", "/v1/account/events", "--exclude-path", "/v1/sessions/current",
                // Not the admin's; and the links this test is about are the bearer operations' below:
                // the other signed-in operations (fuzzed by the tests above) would thin out its scenarios.
                "--exclude-path-regex", "^/admin|^/v1/(sessions/identity|account/(identities|totp|sessions))"
            ])
        for operation in ["GET /v1/account", "PATCH /v1/account", "GET /v1/account/history", "POST /v1/account/upgrade", "DELETE /v1/account"] {
            #expect(answers.contains { $0.operation == operation && (200..<300).contains($0.status) }, "\(operation) not reached:\n\(text)")
        }
        #expect(await server.terminate() == 0)
    }

    /// The admin API under `/admin/`, in a session the sign-in form opened (its cookie): every
    /// operation but signing in and out and the live tail (it never ends while the session lasts), on a store with an
    /// account and its history, and with the jobs the generated requests start.
    @Test("schemathesis on the admin API: no server error, every answer as documented")
    func adminAPI() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-admin-store-\(UUID().uuidString)")
        let credential = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-admin-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: credential)
        }
        let admin = "auditor:an auditor's long password"
        try "\(admin)\n".write(to: credential, atomically: false, encoding: .utf8)
        let server = try ServeProcess(store: store, extra: ["--admin-credential-file", credential.path])
        try await server.start()
        let signup = try await server.send(
            "POST", "/v1/accounts", json: #"{"userId":"fuzz@example.org","password":"correct horse battery","name":{"givenName":"Fuzz"}}"#)
        #expect(signup.status == 201)
        // The console's sign-in form opens the session (HTTP Basic opens none).
        var request = HTTPClientRequest(url: server.base + "/admin/api/session")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"name":"auditor","password":"an auditor's long password"}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        #expect(response.status.code == 200)
        let cookie = try #require(response.headers["Set-Cookie"].first?.split(separator: ";").first.map(String.init))
        // Signing in and out is left to AdminCSRFTests (a sign-out would end the fuzzer's session).
        let value = String(cookie.dropFirst("spezi_admin=".count))
        let text = try await Self.fuzz(
            server, auth: "[auth.openapi.adminSession]\napi_key = \"\(value)\"\n",
            ["--include-path-regex", "^/admin", "--exclude-path", "/admin/api/tail", "--exclude-path", "/admin/api/session"])
        Self.expectComplete(text, operations: 10, requests: 300)
        // The requests got past the session check: the verify jobs they started are in the audit stream.
        var audit = HTTPClientRequest(url: server.base + "/admin/api/audit")
        audit.headers.add(name: "Cookie", value: cookie)
        let answer = try await HTTPClient.shared.execute(audit, timeout: .seconds(60))
        let entries = try JSONSerialization.jsonObject(with: Data(buffer: try await answer.body.collect(upTo: 16 << 20))) as? [[String: Any]]
        #expect(answer.status.code == 200)
        #expect((entries ?? []).contains { $0["action"] as? String == "admin.verified" }, "\(entries ?? [])")
        #expect(await server.terminate() == 0)
    }

    /// The operations that take a token the server sent by mail or an outbox (signup confirmation,
    /// password reset): a schema-valid one it never issued is 400 (invalid, used or expired), or
    /// 404 where confirmations are off, not a refusal of valid data. An identity token may be
    /// 16 KiB long, so a schema-violating body for the identity operations can pass the 64 KiB
    /// body limit: its 413 is a rejection too.
    static let tokenOperations = """

        [[operations]]
        include-operation-id-regex = "^(confirmSignup|completePasswordReset)$"
        checks.positive_data_acceptance.expected-statuses = ["2XX", 400, 404, 409, 429]

        [[operations]]
        include-operation-id-regex = "^(identitySignIn|linkIdentity)$"
        checks.negative_data_rejection.expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]

        """

    /// Runs schemathesis on the server's document with every check, `auth` (its configuration
    /// file's `[auth]` tables) and `arguments`, and returns its report; records an issue unless
    /// it passed.
    static func fuzz(_ server: ServeProcess, auth: String, _ arguments: [String]) async throws -> String {
        try await fuzzWithAnswers(server, auth: auth, ["--phases", "examples,coverage,fuzzing,stateful"] + arguments).report
    }

    /// ``fuzz(_:auth:_:)``, and every answer the server gave: the operation and the status.
    static func fuzzWithAnswers(
        _ server: ServeProcess, auth: String, _ arguments: [String]
    ) async throws -> (report: String, answers: [(operation: String, status: Int)]) {
        // schemathesis keeps a cache in its working folder: a temporary one, not the package.
        let workFolder = FileManager.default.temporaryDirectory.appendingPathComponent("schemathesis-work-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workFolder) }
        try auth.write(to: workFolder.appendingPathComponent("schemathesis.toml"), atomically: true, encoding: .utf8)
        let answersFile = workFolder.appendingPathComponent("answers.txt")
        try hooks(answers: answersFile).write(to: workFolder.appendingPathComponent("fuzz_hooks.py"), atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["SCHEMATHESIS_HOOKS"] = "fuzz_hooks"
        let run = try await runProgram(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c", "import sys; sys.argv[0] = 'st'; from schemathesis.cli import schemathesis; schemathesis()",
                "run", "\(server.base)/openapi.yaml", "--checks", "all", "--max-examples", "60", "--seed", "20261124",
                "--request-timeout", "20", "--no-color", "--warnings", "off"
            ] + arguments, environment: environment, errorsToOutput: true, in: workFolder)
        #expect(
            run.status == 0, "schemathesis reported problems (or is not installed: Tools/run.sh install-test-dependencies):\n\(run.output)")
        let answers = ((try? String(contentsOf: answersFile, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
            line.split(separator: "\t").count == 2 ? (String(line.split(separator: "\t")[0]), Int(line.split(separator: "\t")[1]) ?? 0) : nil
        }
        return (run.output, answers)
    }

    /// schemathesis hooks: each request from a client of its own (`X-Forwarded-For` 10.x.y.z,
    /// counted up: schemathesis seeds Python's `random`), and each answer's operation and status
    /// appended to `answers`.
    static func hooks(answers: URL) -> String {
        """
        import itertools
        import unicodedata
        import schemathesis

        clients = itertools.count(1)

        def long_enough(password):
            # The document counts a password's characters as grapheme clusters (a letter with its
            # combining marks is one), which JSON Schema's minLength cannot say: a password of 8
            # code points with fewer than 8 base characters gets more, so it is valid for both.
            bases = sum(1 for c in password if unicodedata.combining(c) == 0 and unicodedata.category(c) not in ("Mn", "Me", "Cf"))
            return password if bases >= 8 else password + "abcdefgh"

        def fix_passwords(body):
            if not isinstance(body, dict):
                return
            for key in ("password", "newPassword"):
                if isinstance(body.get(key), str):
                    body[key] = long_enough(body[key])
            fix_passwords(body.get("set"))

        @schemathesis.hook
        def before_call(ctx, case, kwargs):
            n = next(clients)
            case.headers = dict(case.headers or {})
            case.headers["X-Forwarded-For"] = "10.%d.%d.%d" % ((n >> 16) & 255, (n >> 8) & 255, n & 255)
            fix_passwords(case.body)

        @schemathesis.hook
        def after_call(ctx, case, response):
            with open(\(String(reflecting: answers.path)), "a") as answers:
                answers.write("%s\\t%d\\n" % (case.operation.label, response.status_code))

        """
    }

    /// Not vacuous: every selected operation was tested (at least `operations`), with at least
    /// `requests` generated requests.
    static func expectComplete(_ text: String, operations: Int, requests: Int) {
        func number(after label: String) -> Int? {
            text.split(separator: "\n").first { $0.contains(label) }.flatMap { line in
                Int(line.split(separator: label).last?.split(separator: "/").first?.trimmingCharacters(in: .whitespaces) ?? "")
            }
        }
        #expect(number(after: "Tested:") == number(after: "Selected:"), "\(text)")
        #expect((number(after: "Tested:") ?? 0) >= operations, "\(text)")
        let generated = text.split(separator: "\n").first { $0.contains(" generated, ") }
        let count = generated.flatMap { Int($0.split(separator: " ").first { Int($0) != nil } ?? "") } ?? 0
        #expect(count >= requests, "\(generated ?? "no summary")")
    }
}
