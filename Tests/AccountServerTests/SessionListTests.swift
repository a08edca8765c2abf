//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import SpeziAccountStore
import Testing

/// The owner's session list over real HTTP: `GET /v1/account/sessions`, `DELETE
/// /v1/account/sessions/{id}`, and the console's list and end, audited.
@Suite("sessions the owner (and the admin) can see and end", .timeLimit(.minutes(2)))
struct SessionListTests {
    static let adminPassword = "a long admin password"

    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    static func basic() -> [String: String] {
        ["Authorization": "Basic \(Data("grace:\(adminPassword)".utf8).base64EncodedString())"]
    }

    static func sessions(_ answer: RawHTTP.Answer) -> [[String: Any]] {
        answer.json["sessions"] as? [[String: Any]] ?? []
    }

    @Test("the list shows each session opened, where from and which is the caller's; ending one refuses its token, the other works")
    func listAndEnd() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let (first, _) = try await server.signup("ada@example.org", source: "127.0.0.2")
            let login = try await RawHTTP.send(
                port: server.port, source: "127.0.0.3", "POST", "/v1/sessions",
                json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#, headers: ["User-Agent": "SpeziPhone/2.1"])
            #expect(login.status == 201, "\(login.body)")
            let second = try #require(login.json["token"] as? String)

            let list = try await RawHTTP.send(port: server.port, "GET", "/v1/account/sessions", headers: Self.bearer(first))
            #expect(list.status == 200, "\(list.body)")
            let listed = Self.sessions(list)
            #expect(listed.count == 2 && list.json["total"] as? Int == 2, "\(list.body)")
            // Newest first: the login, from its address with its user agent; then the signup's, the caller's own.
            let newest = try #require(listed.first)
            let own = try #require(listed.last)
            #expect(newest["clientAddress"] as? String == "127.0.0.3" && newest["userAgent"] as? String == "SpeziPhone/2.1")
            #expect(newest["current"] as? Bool == false && own["current"] as? Bool == true)
            // The signup's session was opened without recording its client.
            #expect(own["clientAddress"] == nil && own["userAgent"] == nil)
            #expect(newest["openedAt"] is String && newest["expiresAt"] is String)
            // An id is not the token, nor any part of it.
            let secondId = try #require(newest["id"] as? String)
            let ownId = try #require(own["id"] as? String)
            for id in [secondId, ownId] {
                #expect(!first.contains(id) && !second.contains(id))
            }
            #expect(ownId == AccountStore.sessionHash(ofToken: first))

            // Ending the second session: its token answers 401, the caller's still works.
            let ended = try await RawHTTP.send(port: server.port, "DELETE", "/v1/account/sessions/\(secondId)", headers: Self.bearer(first))
            #expect(ended.status == 204, "\(ended.body)")
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(second)).status == 401)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(first)).status == 200)
            // Ended once: a second end of it, and an id no session has, answer 404.
            for id in [secondId, String(repeating: "0", count: 64), "not-an-id"] {
                let again = try await RawHTTP.send(port: server.port, "DELETE", "/v1/account/sessions/\(id)", headers: Self.bearer(first))
                #expect(again.status == 404 && again.problemType == "urn:spezi-account-store:problem:no-such-session", "\(again.body)")
            }
            let after = try await RawHTTP.send(port: server.port, "GET", "/v1/account/sessions", headers: Self.bearer(first))
            #expect(Self.sessions(after).compactMap { $0["id"] as? String } == [ownId])

            // The caller's own session can be ended too.
            #expect(try await RawHTTP.send(port: server.port, "DELETE", "/v1/account/sessions/\(ownId)", headers: Self.bearer(first)).status == 204)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(first)).status == 401)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account/sessions", headers: Self.bearer(first)).status == 401)
        }
    }

    @Test("another account's session id answers 404, as an unknown one does, and that session goes on")
    func otherAccountsSession() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let (ada, _) = try await server.signup("ada@example.org", source: "127.0.0.2")
            let (bob, _) = try await server.signup("bob@example.org", source: "127.0.0.4")
            let bobs = try await RawHTTP.send(port: server.port, "GET", "/v1/account/sessions", headers: Self.bearer(bob))
            let bobId = try #require(Self.sessions(bobs).first?["id"] as? String)
            let refused = try await RawHTTP.send(port: server.port, "DELETE", "/v1/account/sessions/\(bobId)", headers: Self.bearer(ada))
            #expect(refused.status == 404 && refused.problemType == "urn:spezi-account-store:problem:no-such-session", "\(refused.body)")
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(bob)).status == 200)
            // Without a token, nothing is listed or ended.
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account/sessions").status == 401)
            #expect(try await RawHTTP.send(port: server.port, "DELETE", "/v1/account/sessions/\(bobId)").status == 401)
        }
    }

    @Test("the admin lists (audited) and ends a session, same-origin only; the history shows the admin as the ending's actor")
    func adminEndsSession() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.adminPassword)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            _ = try await server.signup("ada@example.org", source: "127.0.0.2")
            let login = try await server.login("ada@example.org", "correct horse battery", source: "127.0.0.7")
            let token = try #require(login.json["token"] as? String)
            let accountId = try #require(AccountStore.accountId(ofToken: token))
            let list = try await RawHTTP.send(port: server.port, "GET", "/admin/api/accounts/\(accountId)/sessions", headers: Self.basic())
            #expect(list.status == 200, "\(list.body)")
            let listed = Self.sessions(list)
            #expect(listed.count == 2 && listed.first?["current"] as? Bool == false && listed.first?["clientAddress"] as? String == "127.0.0.7")
            let sessionId = try #require(listed.first?["id"] as? String)
            let viewed = try await server.store.adminActions().filter { $0.action == .sessionsViewed(accountId: accountId) }
            #expect(viewed.count == 1 && viewed.first?.admin == "grace")

            // A cross-site request ends nothing.
            var crossSite = Self.basic()
            crossSite["Sec-Fetch-Site"] = "cross-site"
            let forged = try await RawHTTP.send(
                port: server.port, "DELETE", "/admin/api/accounts/\(accountId)/sessions/\(sessionId)", headers: crossSite)
            #expect(forged.status == 403, "\(forged.body)")
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(token)).status == 200)
            // Without the credential: 401.
            #expect(try await RawHTTP.send(port: server.port, "DELETE", "/admin/api/accounts/\(accountId)/sessions/\(sessionId)").status == 401)

            let ended = try await RawHTTP.send(
                port: server.port, "DELETE", "/admin/api/accounts/\(accountId)/sessions/\(sessionId)", headers: Self.basic())
            #expect(ended.status == 204, "\(ended.body)")
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(token)).status == 401)
            let ending = try #require(try await server.store.history(of: accountId).last)
            #expect(ending.type == "auth.session-ended" && ending.actor == "admin:grace")
            // Not open any more, an unknown session and an unknown account: 404.
            for path in ["\(accountId)/sessions/\(sessionId)", "\(accountId)/sessions/abc", "no-such-account/sessions/\(sessionId)"] {
                let again = try await RawHTTP.send(port: server.port, "DELETE", "/admin/api/accounts/\(path)", headers: Self.basic())
                #expect(again.status == 404, "\(path): \(again.body)")
            }
            #expect(try await RawHTTP.send(port: server.port, "GET", "/admin/api/accounts/nobody/sessions", headers: Self.basic()).status == 404)
        }
    }

    @Test("the list is cut at 100 sessions, the caller's own kept; where a session came from is shredded with the account")
    func boundedAndShredded() async throws {
        // More sessions open than the list shows: the store's own limit of open sessions lifted.
        var unlimited = AccountStoreLimits()
        unlimited.maxOpenSessionsPerAccount = nil
        try await LiveServer.with(realHashing: false, tweaks: StoreTweaks(limits: unlimited)) { server in
            let store = server.store
            let (token, accountId) = try await server.signup("ada@example.org", source: "127.0.0.2")
            var context = AccountStore.Context()
            context.sessionClient = SessionClient(address: "127.0.0.9", userAgent: String(repeating: "ü", count: 200))
            for _ in 0..<(AccountStore.maxListedSessions + 4) {
                _ = try await store.startSession(for: accountId, validity: .seconds(3_600), context: context)
            }
            let answer = try await RawHTTP.send(port: server.port, "GET", "/v1/account/sessions", headers: Self.bearer(token))
            let listed = Self.sessions(answer)
            #expect(listed.count == AccountStore.maxListedSessions && answer.json["total"] as? Int == AccountStore.maxListedSessions + 5)
            // The oldest, the caller's own, is listed though it is not among the 100 newest.
            #expect(listed.filter { $0["current"] as? Bool == true }.count == 1)
            // A user agent is cut to 256 bytes.
            let agent = try #require(listed.first?["userAgent"] as? String)
            #expect(agent.utf8.count == SessionClient.maxUserAgentBytes)

            try await store.delete(accountId)
            let clients = try await store.history(of: accountId).filter { $0.type == "auth.session-client" }
            // One for each session the store opened with a client (the signup's records none).
            #expect(clients.count == AccountStore.maxListedSessions + 4)
            #expect(clients.allSatisfy { $0.isRedacted })
        }
    }
}
