//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import AccountServer
import Foundation
import SpeziAccountStore
import TestSupport
import Testing

/// Walks the threat model's table (`ThreatModel.md`): every row has a spend here that runs it
/// against a live server over real sockets, with the row's limit made small, and sees the bound
/// hold; every spend here has a row.
@Suite("the threat model, walked row by row", .timeLimit(.minutes(5)))
struct ThreatModelTests {
    /// One row's budget: how the server is set up, and what spends the budget (expecting the bound).
    struct Spend: Sendable {
        var configure: @Sendable (inout AccountServerConfiguration, inout StoreTweaks) -> Void = { _, _ in }
        let run: @Sendable (LiveServer) async throws -> Void
    }

    static let password = "correct horse battery"
    static let small = RateLimit(burst: 2, perMinute: 1)

    /// The ids of the article's table of routes.
    static func articleRows() throws -> [String] {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AccountServer/AccountServer.docc/ThreatModel.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        guard let start = text.range(of: "### The routes") else { return [] }
        let rest = text[start.upperBound...]
        let section = rest.range(of: "\n### ").map { rest[..<$0.lowerBound] } ?? rest
        return section.split(separator: "\n").compactMap { line in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard line.hasPrefix("|"), let id = cells.first, !id.isEmpty, id != "id", !id.hasPrefix("---") else { return nil }
            return id
        }
    }

    @Test("every row of the article has a spend, and every spend a row")
    func tableMatches() throws {
        let rows = try Self.articleRows()
        #expect(rows.count == Set(rows).count, "a row id is repeated")
        let missing = Set(rows).subtracting(Self.spends.keys).sorted()
        let extra = Set(Self.spends.keys).subtracting(rows).sorted()
        #expect(missing.isEmpty && extra.isEmpty, "rows without a spend: \(missing); spends without a row: \(extra)")
    }

    @Test("each row's bound holds", arguments: ThreatModelTests.spends.keys.sorted())
    func row(_ id: String) async throws {
        let spend = try #require(Self.spends[id])
        var configuration = AccountServerConfiguration()
        var tweaks = StoreTweaks()
        spend.configure(&configuration, &tweaks)
        try await LiveServer.with(configuration: configuration, realHashing: false, tweaks: tweaks) { server in
            try await spend.run(server)
            // After the abuse the log is intact.
            await server.store.settleBackgroundWrites()
            let report = try await server.store.log.verify(progress: nil)
            #expect(report.isIntact, "\(String(describing: report.problem))")
        }
    }

    // MARK: The spends

    static func send(
        _ server: LiveServer, _ method: String, _ path: String, json: String? = nil, token: String? = nil, source: String = "127.0.0.2",
        headers: [String: String] = [:]
    ) async throws -> RawHTTP.Answer {
        var headers = headers
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try await RawHTTP.send(port: server.port, source: source, method, path, json: json, headers: headers)
    }

    static func statuses(_ count: Int, _ request: (Int) async throws -> RawHTTP.Answer) async throws -> [Int] {
        var statuses: [Int] = []
        for index in 0..<count { statuses.append(try await request(index).status) }
        return statuses
    }

    static func signupJSON(_ userId: String) -> String {
        #"{"userId":"\#(userId)","password":"\#(password)","name":{"givenName":"Ada"}}"#
    }

    static func adminSignIn(_ server: LiveServer, _ password: String, source: String, cookies: [String] = []) async throws -> RawHTTP.Answer {
        var headers = ["Sec-Fetch-Site": "same-origin"]
        if !cookies.isEmpty { headers["Cookie"] = cookies.joined(separator: "; ") }
        return try await send(
            server, "POST", "/admin/api/session", json: #"{"name":"root","password":"\#(password)"}"#, source: source, headers: headers)
    }

    static let admin: @Sendable (inout AccountServerConfiguration, inout StoreTweaks) -> Void = { configuration, _ in
        configuration.admin = try? AdminCredential(name: "root", password: "admin password 123")
    }

    static let spends: [String: Spend] = [
        "signup-hash": Spend(
            configure: { configuration, _ in configuration.rateLimits.signupsPerClient = small },
            run: { server in
                let statuses = try await Self.statuses(3) { try await send(server, "POST", "/v1/accounts", json: signupJSON("s\($0)@example.org")) }
                #expect(statuses == [201, 201, 429])
                // A taken user id is refused before any hash (409), and counts like any signup.
            }),
        "signup-records": Spend(
            configure: { configuration, _ in configuration.rateLimits.recordsPerClient = small },
            run: { server in
                let observed = try await Self.statuses(3) { _ in try await send(server, "POST", "/v1/accounts/anonymous") }
                #expect(observed == [201, 201, 429])
            }),
        "anonymous-replay": Spend { server in
            let first = try await send(server, "POST", "/v1/accounts/anonymous", headers: ["Idempotency-Key": "k1"])
            let replay = try await send(server, "POST", "/v1/accounts/anonymous", source: "127.0.0.3", headers: ["Idempotency-Key": "k1"])
            #expect(first.status == 201 && replay.status == 409 && replay.json["token"] == nil)
        },
        "login-client": Spend(
            configure: { configuration, _ in configuration.rateLimits.loginsPerClient = small },
            run: { server in
                let observed = try await Self.statuses(3) { try await server.login("x\($0)@example.org", "wrong", source: "127.0.0.2") }
                #expect(observed == [401, 401, 429])
            }),
        "login-lock": Spend { server in
            _ = try await server.signup("owner@example.org", source: "127.0.0.9")
            let statuses = try await Self.statuses(7) { _ in try await server.login("owner@example.org", "wrong", source: "127.0.0.2") }
            #expect(statuses == [401, 401, 401, 401, 401, 429, 429])
        },
        "login-queue": Spend(
            configure: { _, tweaks in tweaks.loginThrottling = queueing },
            run: { server in
                _ = try await server.signup("owner@example.org", source: "127.0.0.9")
                let statuses = try await Self.statuses(4) { try await server.login("owner@example.org", "wrong", source: "127.0.1.\($0 + 1)") }
                #expect(statuses == [401, 401, 401, 429])
            }),
        "login-owner": Spend(
            configure: { _, tweaks in tweaks.loginThrottling = queueing },
            run: { server in
                let signup = try await send(server, "POST", "/v1/accounts", json: signupJSON("owner@example.org"), source: "127.0.0.9")
                let cookies = signup.cookiePairs.filter { $0.hasPrefix("spezi_device_") }
                for index in 0..<4 { _ = try await server.login("owner@example.org", "wrong", source: "127.0.1.\(index + 1)") }
                #expect(try await server.login("owner@example.org", password, source: "127.0.0.3").status == 429)
                #expect(try await server.login("owner@example.org", password, source: "127.0.0.9", cookies: cookies).status == 201)
            }),
        "reset-request": Spend(
            configure: { configuration, _ in configuration.rateLimits.resetsPerClient = small },
            run: { server in
                let statuses = try await Self.statuses(3) { _ in
                    try await send(server, "POST", "/v1/password-resets", json: #"{"userId":"a@example.org"}"#)
                }
                #expect(statuses == [202, 202, 429])
            }),
        "reset-complete": Spend(
            configure: { configuration, _ in configuration.rateLimits.resetCompletionsPerAccount = small },
            run: { server in
                _ = try await server.signup("owner@example.org", source: "127.0.0.9")
                _ = try await send(server, "POST", "/v1/password-resets", json: #"{"userId":"owner@example.org"}"#, source: "127.0.0.9")
                await server.store.settleBackgroundWrites()
                let token = try #require(server.fixture.resets.withLock { $0.last?.token })
                let wrong = try await Self.statuses(3) {
                    try await send(
                        server, "POST", "/v1/password-resets/complete",
                        json: #"{"userId":"owner@example.org","token":"wrong\#($0)","newPassword":"new password 1234"}"#, source: "127.0.1.\($0 + 1)")
                }
                #expect(wrong == [400, 400, 429])
                let valid = try await send(
                    server, "POST", "/v1/password-resets/complete",
                    json: #"{"userId":"owner@example.org","token":"\#(token)","newPassword":"new password 1234"}"#, source: "127.0.0.9")
                #expect(valid.status == 204)
            }),
        "positions": Spend { server in
            let observed = try await send(server, "GET", "/v1/positions/1").status
            #expect(observed == 401)
        },
        "change-count": Spend(
            configure: { _, tweaks in tweaks.limits = limits { $0.changesPerAccountPerHour = 2 } },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let statuses = try await Self.statuses(3) {
                    try await send(server, "PATCH", "/v1/account", json: #"{"set":{"name":{"givenName":"N\#($0)"}}}"#, token: token)
                }
                #expect(statuses == [200, 200, 429])
            }),
        "change-bytes": Spend(
            configure: { _, tweaks in tweaks.limits = limits { $0.changeBytesPerAccountPerDay = 10_000 } },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let name = String(repeating: "n", count: 6_000)
                let statuses = try await Self.statuses(2) { index in
                    try await send(server, "PATCH", "/v1/account", json: #"{"set":{"name":{"givenName":"\#(name)\#(index)"}}}"#, token: token)
                }
                #expect(statuses == [200, 429])
            }),
        "step-up": Spend(
            configure: { configuration, _ in configuration.rateLimits.stepUpsPerAccount = small },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let statuses = try await Self.statuses(3) {
                    try await send(
                        server, "PATCH", "/v1/account", json: #"{"set":{"password":"taken over 12345"},"currentPassword":"wrong \#($0)"}"#,
                        token: token, source: "127.0.1.\($0 + 1)")
                }
                #expect(statuses == [401, 401, 429])
            }),
        "user-id-change": Spend(
            configure: { configuration, _ in configuration.rateLimits.userIdChangesPerAccount = small },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let statuses = try await Self.statuses(3) {
                    try await send(
                        server, "PATCH", "/v1/account", json: #"{"set":{"userId":"owner\#($0)@example.org"},"currentPassword":"\#(password)"}"#,
                        token: token)
                }
                #expect(statuses == [200, 200, 429])
            }),
        "history": Spend(
            configure: { configuration, _ in configuration.rateLimits.historyPagesPerAccount = small },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                #expect(try await send(server, "GET", "/v1/account/history?limit=501", token: token).status == 400)
                let statuses = try await Self.statuses(3) { _ in try await send(server, "GET", "/v1/account/history?limit=1", token: token) }
                #expect(statuses == [200, 200, 429])
            }),
        "open-sessions": Spend(
            configure: { _, tweaks in tweaks.limits = limits { $0.maxOpenSessionsPerAccount = 2 } },
            run: { server in
                // The signup's session, then three sign-ins from three addresses, a second apart
                // (so that each session expires after the one before): each one gets in.
                var tokens = [try await server.signup("owner@example.org", source: "127.0.0.9").token]
                for index in 0..<3 {
                    server.fixture.advance(seconds: 1)
                    let answer = try await server.login("owner@example.org", password, source: "127.0.2.\(index + 1)")
                    #expect(answer.status == 201, "\(answer.body)")
                    tokens.append(try #require(answer.json["token"] as? String))
                }
                // Two stay open, the newest; the others were ended to make room.
                let statuses = try await Self.statuses(tokens.count) { try await send(server, "GET", "/v1/account", token: tokens[$0]) }
                #expect(statuses == [401, 401, 200, 200])
            }),
        "session-list": Spend(
            configure: { configuration, _ in configuration.rateLimits.historyPagesPerAccount = small },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let statuses = try await Self.statuses(3) { _ in try await send(server, "GET", "/v1/account/sessions", token: token) }
                #expect(statuses == [200, 200, 429])
            }),
        "totp-guess": Spend { server in
            let (_, accountId) = try await server.signup("owner@example.org", source: "127.0.0.9")
            let enrolment = try await server.store.enrolTOTP(accountId, issuer: "Threats")
            let totp = try TOTP(secret: try #require(TOTP.bytes(base32: enrolment.secret)))
            let now = server.fixture.now.withLock { $0 }
            try await server.store.confirmTOTP(accountId, code: totp.code(at: now))
            let right = totp.code(at: now.addingTimeInterval(30))
            let wrong = right == "000000" ? "111111" : "000000"
            let statuses = try await Self.statuses(6) { _ in
                try await send(
                    server, "POST", "/v1/sessions", json: #"{"userId":"owner@example.org","password":"\#(password)","totp":"\#(wrong)"}"#)
            }
            #expect(statuses == [403, 403, 403, 403, 403, 429])
            // The right code from that address is locked out with the wrong ones.
            let locked = try await send(
                server, "POST", "/v1/sessions", json: #"{"userId":"owner@example.org","password":"\#(password)","totp":"\#(right)"}"#)
            #expect(locked.status == 429)
        },
        "totp-step-up": Spend(
            configure: { configuration, _ in configuration.rateLimits.stepUpsPerAccount = small },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let statuses = try await Self.statuses(3) { _ in
                    try await send(server, "POST", "/v1/account/totp/confirm", json: #"{"code":"000000"}"#, token: token)
                }
                #expect(statuses == [409, 409, 429])
            }),
        "forged-retry": Spend { server in
            let (_, accountId) = try await server.signup("owner@example.org", source: "127.0.0.9")
            let forged = "\(accountId).\(String(repeating: "B", count: 43))"
            #expect(try await send(server, "DELETE", "/v1/account", token: forged, headers: ["Idempotency-Key": "k"]).status == 401)
            #expect(try server.store.details(of: accountId) != nil)
        },
        "streams": Spend(
            configure: { configuration, _ in configuration.connections.streamsPerSession = 1 },
            run: { server in
                let (token, _) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let (descriptor, head) = try await RawHTTP.openStream(
                    port: server.port, source: "127.0.0.2",
                    RawHTTP.request("GET", "/v1/account/events", headers: ["Authorization": "Bearer \(token)"]))
                defer { close(descriptor) }
                #expect(head.status == 200)
                #expect(try await send(server, "GET", "/v1/account/events", token: token).status == 429)
            }),
        "audit-token": Spend { server in
            let observed = try await send(server, "GET", "/v1/account", token: "$admin.\(String(repeating: "A", count: 43))").status
            #expect(observed == 401)
        },
        "admin-client": Spend(
            configure: { configuration, tweaks in
                admin(&configuration, &tweaks)
                configuration.rateLimits.adminAttemptsPerClient = small
            },
            run: { server in
                let observed = try await Self.statuses(3) { try await adminSignIn(server, "guess \($0)", source: "127.0.0.2") }
                #expect(observed == [401, 401, 429])
            }),
        "admin-overall": Spend(
            configure: { configuration, tweaks in
                admin(&configuration, &tweaks)
                configuration.rateLimits.adminAttemptsOverall = RateLimit(burst: 3, perMinute: 1)
            },
            run: { server in
                let first = try await adminSignIn(server, "admin password 123", source: "127.0.0.9")
                let device = first.cookiePairs.filter { $0.hasPrefix("spezi_admin_device=") }
                let guesses = try await Self.statuses(3) { try await adminSignIn(server, "guess \($0)", source: "127.0.1.\($0 + 1)") }
                #expect(first.status == 200 && guesses == [401, 401, 429])
                #expect(try await adminSignIn(server, "admin password 123", source: "127.0.0.9", cookies: device).status == 200)
            }),
        "admin-tail": Spend(
            configure: { configuration, tweaks in
                admin(&configuration, &tweaks)
                configuration.heartbeat = .milliseconds(200)
            },
            run: { server in
                let signIn = try await adminSignIn(server, "admin password 123", source: "127.0.0.2")
                let session = try #require(signIn.cookiePairs.first { $0.hasPrefix("spezi_admin=") })
                let headers = ["Cookie": session, "Sec-Fetch-Site": "same-origin"]
                let (descriptor, head) = try await RawHTTP.openStream(
                    port: server.port, source: "127.0.0.2", RawHTTP.request("GET", "/admin/api/tail", headers: headers))
                defer { close(descriptor) }
                #expect(head.status == 200)
                #expect(try await send(server, "DELETE", "/admin/api/session", headers: headers).status == 204)
                #expect(try await RawHTTP.ends(descriptor, within: 5))
            }),
        "admin-history": Spend(
            configure: admin,
            run: { server in
                let (_, accountId) = try await server.signup("owner@example.org", source: "127.0.0.9")
                let signIn = try await adminSignIn(server, "admin password 123", source: "127.0.0.2")
                let headers = ["Cookie": signIn.cookiePairs.joined(separator: "; "), "Sec-Fetch-Site": "same-origin"]
                #expect(try await send(server, "GET", "/admin/api/accounts/\(accountId)/history?limit=501", headers: headers).status == 400)
                let page = try await send(server, "GET", "/admin/api/accounts/\(accountId)/history?limit=1", headers: headers)
                #expect(page.status == 200 && (page.json["entries"] as? [Any])?.count == 1 && page.json["next"] as? String == "1")
            }),
        "connections": Spend(
            configure: { configuration, _ in configuration.connections.maxConnectionsPerClient = 2 },
            run: { server in
                let port = server.port
                let held = try await offThePool { try (0..<2).map { _ in try RawHTTP.connect(port: port, source: "127.0.0.2") } }
                defer { for descriptor in held { close(descriptor) } }
                // Let the server accept them before the third arrives.
                try await Task.sleep(for: .milliseconds(300))
                let third = try await offThePool { try RawHTTP.connect(port: port, source: "127.0.0.2") }
                defer { close(third) }
                #expect(try await offThePool { RawHTTP.closedByServer(third, within: 5) })
                #expect(try await send(server, "GET", "/health", source: "127.0.0.3").status == 200)
            })
    ]

    /// Past 2 failures of a user id, one check every 2 s, waiting at most 1 s.
    static let queueing = LoginThrottling(
        attemptsPerClient: 5, lockDuration: .seconds(300), accountWideAttempts: 2, slowdownInterval: .seconds(2), maximumWait: .seconds(1))

    static func limits(_ change: (inout AccountStoreLimits) -> Void) -> AccountStoreLimits {
        var limits = AccountStoreLimits()
        change(&limits)
        return limits
    }
}
