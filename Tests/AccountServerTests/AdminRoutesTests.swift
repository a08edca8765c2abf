//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import SpeziAccount
import SpeziAccountStore
import TestTiers
import Testing

@Suite("Audit console API: admin credential, sessions, account history, activity, verify and rebuild, all audited")
struct AdminRoutesTests {
    static let password = "a long admin password"

    private func configuration(validity: Duration = .seconds(1_800)) throws -> AccountServerConfiguration {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        configuration.adminSessionValidity = validity
        return configuration
    }

    private func basic(_ name: String = "grace", _ password: String = password) -> HTTPFields {
        [.authorization: "Basic \(Data("\(name):\(password)".utf8).base64EncodedString())"]
    }

    /// The `name=value` of a Set-Cookie header, as a Cookie header sends it back.
    private func cookie(_ response: APIResponse) throws -> HTTPFields {
        let header = try #require(response.headers[.setCookie])
        #expect(header.contains("HttpOnly") && header.contains("SameSite=Strict") && header.contains("Path=/admin"))
        return [.cookie: String(try #require(header.split(separator: ";").first))]
    }

    /// Signs in through the console's form route: the answer (its Set-Cookie opens the session).
    private func signIn(_ api: APIClient) async throws -> APIResponse {
        try await api.send(.post, "/admin/api/session", json: #"{"name":"grace","password":"\#(Self.password)"}"#)
    }

    /// Polls a job until it ends (at most 20 s).
    private func finished(_ api: APIClient, _ job: APIResponse, _ headers: HTTPFields) async throws -> APIResponse {
        let id = try #require(job.body["id"] as? String)
        for _ in 0..<400 {
            let state = try await api.send(.get, "/admin/api/jobs/\(id)", headers: headers)
            if state.body["state"] as? String != "running" { return state }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("job \(id) did not end")
        return job
    }

    @Test("credentials and credential files are checked; without a credential there is no console")
    func credentials() async throws {
        #expect(throws: AdminCredentialError.self) { try AdminCredential(name: "grace", password: "short") }
        #expect(throws: AdminCredentialError.self) { try AdminCredential(name: "a:b", password: Self.password) }
        #expect(throws: AdminCredentialError.self) { try AdminCredential(name: "", password: Self.password) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("admin-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try "grace:\(Self.password)\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try AdminCredential(contentsOf: file.path).name == "grace")
        try "no colon here\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: AdminCredentialError.self) { try AdminCredential(contentsOf: file.path) }

        try await ServerFixture().withServer { api, _ in
            let answer = try await api.send(.get, "/admin/api/whoami", headers: basic())
            #expect(answer.status == 404)
        }
    }

    @Test("401 and nothing else without the credential; the sign-in form opens a session cookie, Basic does not; the cookie expires")
    func authentication() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, _ in
            let refusals = [HTTPFields(), basic("grace", "a wrong password!"), basic("someone", Self.password), [.cookie: "spezi_admin=1.00"]]
            for path in ["/admin/api/accounts?query=x", "/admin/api/log", "/admin/api/whoami", "/admin/api/tail"] {
                for headers in refusals {
                    let refused = try await api.send(.get, path, headers: headers)
                    #expect(refused.status == 401 && refused.headers[.wwwAuthenticate]?.hasPrefix("Basic ") == true, "\(path)")
                    #expect(refused.problemType == "urn:spezi-account-store:problem:admin-unauthenticated")
                    #expect(!refused.text.contains("<") && !refused.text.contains("grace"))
                }
            }
            // The page: one document, its script allowed by hash only; it holds no data, so it is
            // served without the credential too (its script shows the sign-in form).
            let page = try await api.send(.get, "/admin/")
            #expect(page.status == 200 && page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.text.contains("<h2>Find an account</h2>") && page.text.contains("new EventSource(") && !page.text.contains("<script src"))
            #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'sha256-") == true)
            let signedIn = try await api.send(.get, "/admin/api/whoami", headers: basic())
            #expect(signedIn.status == 200 && signedIn.body["admin"] as? String == "grace")
            #expect(signedIn.headers[.cacheControl] == "no-store" && signedIn.headers[.setCookie] == nil)
            #expect(try await api.send(.get, "/admin/api/whoami", headers: try cookie(try await signIn(api))).status == 200)
        }
        // Expiry, on a server whose sessions last 1 s (only the wait must be long enough, so a slow
        // machine cannot make this pass or fail by chance).
        try await ServerFixture().withServer(configuration: try configuration(validity: .seconds(1))) { api, _ in
            let session = try cookie(try await signIn(api))
            try await Task.sleep(for: .milliseconds(2_100))
            #expect(try await api.send(.get, "/admin/api/whoami", headers: session).status == 401)
        }
    }

    @Test("guessing is limited: the 21st credential presented outside a session in a minute is answered 429")
    func guessing() async throws {
        // The default burst (20) with the slowest refill, so that a slow machine cannot refill a
        // try while the 20 are sent (it would need a minute per try).
        var slow = try configuration()
        slow.rateLimits.adminAttemptsPerClient = RateLimit(burst: 20, perMinute: 1)
        try await ServerFixture().withServer(configuration: slow) { api, _ in
            let start = ContinuousClock.now
            var statuses: [Int] = []
            for attempt in 0..<40 {
                statuses.append(try await api.send(.get, "/admin/api/whoami", headers: basic("grace", "wrong password \(attempt)")).status)
                if statuses.last != 401 { break }
            }
            let refilled = Int((ContinuousClock.now - start).components.seconds / 60)
            #expect(statuses.last == 429 && statuses.dropLast().allSatisfy { $0 == 401 })
            #expect((20...20 + refilled).contains(statuses.count - 1), "\(statuses.count - 1) tries before the 429")
            // A right credential from the same client is refused too while the limit holds.
            #expect(try await api.send(.get, "/admin/api/whoami", headers: basic()).status == 429)
        }
    }

    @Test(
        "the live tail: the last records, then new ones, as Server-Sent Events with ids and types only; it ends with the session's validity",
        .integration)
    func tail() async throws {
        // On a real socket, read as it arrives: the test stops reading once the new record is in,
        // instead of waiting for the stream's end; the session's validity then ends it. 20 s: a
        // run of the whole suite on two cores once took longer than 12 s between the backlog and
        // the new record, and the stream had ended before it came.
        try await LiveServer.with(configuration: try configuration(validity: .seconds(20)), realHashing: false) { server in
            let (_, accountId) = try await server.signup("ada@example.org")
            let basicAuthorization = "Basic \(Data("grace:\(Self.password)".utf8).base64EncodedString())"
            let stream = try EventStreamClient(
                port: server.port, path: "/admin/api/tail?after=1", token: "", lastEventID: nil, authorization: basicAuthorization)
            let opened = ContinuousClock.now
            let before = try #require(await stream.lines { $0.hasPrefix("id: 2") }, "the backlog did not arrive")
            #expect(before.contains { $0.lowercased().hasPrefix("content-type: text/event-stream") }, "\(before.prefix(8))")
            // A signup while the tail is open (straight on the store, as another node would).
            var details = AccountDetails()
            details.userId = "grace.hopper@example.org"
            details.password = "correct horse battery"
            details.name = PersonNameComponents(givenName: "Grace", familyName: "Hopper")
            let laterId = try await server.store.signup(details).accountId
            let head = try await server.store.log.lastPosition()
            let after = try #require(await stream.lines { $0.contains(#""stream":"\#(laterId)""#) }, "the new record did not arrive")
            let lines = before + after
            let ids = lines.filter { $0.hasPrefix("id: ") }.compactMap { UInt64($0.dropFirst(4)) }
            #expect(ids == Array(2...head), "\(ids)")
            let text = lines.joined(separator: "\n")
            #expect(text.contains(#""stream":"\#(accountId)""#) && text.contains(#""type":"account.created""#))
            #expect(!text.contains("example.org") && !text.contains("Hopper"))
            // The stream ends by itself once the session's validity has passed.
            while await stream.nextLine() != nil {}
            let lasted = ContinuousClock.now - opened
            #expect(lasted >= .seconds(19.5) && lasted < .seconds(60), "the tail lasted \(lasted)")
            let malformed = try await RawHTTP.send(
                port: server.port, "GET", "/admin/api/tail?after=x", headers: ["Authorization": basicAuthorization])
            #expect(malformed.status == 400)
        }
    }

    @Test("find and history: before/after values, a deleted account redacted; each opening is an audit event with the admin's name")
    func history() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            let change = #"{"set":{"name":{"givenName":"Augusta","familyName":"King"}}}"#
            #expect(try await api.send(.patch, "/v1/account", token: token, json: change).status == 200)
            let (_, goneId) = try await api.signup("gone@example.org")
            try await store.delete(goneId)

            let found = try await api.send(.get, "/admin/api/accounts?query=ADA@example.org", headers: basic())
            #expect(found.body["accountId"] as? String == accountId && found.body["deleted"] as? Bool == false)
            let gone = try await api.send(.get, "/admin/api/accounts?query=\(goneId)", headers: basic())
            #expect(gone.body["accountId"] as? String == goneId && gone.body["deleted"] as? Bool == true)
            #expect(try await api.send(.get, "/admin/api/accounts?query=nobody@example.org", headers: basic()).status == 404)
            #expect(try await api.send(.get, "/admin/api/accounts/%24admin/history", headers: basic()).status == 404)

            let history = try await api.send(.get, "/admin/api/accounts/\(accountId)/history", headers: basic())
            let entries = try #require(history.body["entries"] as? [[String: Any]])
            #expect(entries.map { $0["type"] as? String } == ["account.created", "auth.session-started", "account.details-modified"])
            let changes = try #require(entries[2]["changes"] as? [[String: Any]])
            #expect(changes.first?["key"] as? String == "name")
            #expect((changes.first?["old"] as? String)?.contains("Ada") == true && (changes.first?["new"] as? String)?.contains("Augusta") == true)

            let redacted = try await api.send(.get, "/admin/api/accounts/\(goneId)/history", headers: basic())
            let goneEntries = try #require(redacted.body["entries"] as? [[String: Any]])
            #expect(goneEntries.first?["redacted"] as? Bool == true && goneEntries.last?["type"] as? String == "account.deleted")
            #expect(!redacted.text.contains("gone@example.org"))

            let audit = try await api.send(.get, "/admin/api/audit", headers: basic())
            let actions = try #require(JSONSerialization.jsonObject(with: Data(audit.text.utf8)) as? [[String: Any]])
            #expect(actions.map { $0["accountId"] as? String } == [goneId, accountId])
            #expect(actions.allSatisfy { $0["admin"] as? String == "grace" && $0["action"] as? String == "admin.history-viewed" })
            let logged = try await store.log.readStream(AccountStore.adminStream, from: 1, limit: 10)
            #expect(logged.map(\.metadata.actor) == ["admin:grace", "admin:grace"])
        }
    }

    @Test("admin actions: every session of an account ended, then the account erased with its reason; each audited, refused cross-site")
    func endSessionsAndErase() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            let second = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
            let secondToken = try #require(second.token)

            // Cross-site, with a valid credential: refused, nothing ended or erased.
            let crossSite: HTTPFields = [.init("Sec-Fetch-Site")!: "cross-site", .contentType: "application/json"]
            var refused = try await api.send(.delete, "/admin/api/accounts/\(accountId)/sessions", headers: basic() + crossSite)
            #expect(refused.status == 403 && refused.problemType == "urn:spezi-account-store:problem:cross-site-request")
            refused = try await api.send(
                .post, "/admin/api/accounts/\(accountId)/erase", json: #"{"reason":"x"}"#, headers: basic() + crossSite)
            #expect(refused.status == 403)
            #expect(try await api.send(.get, "/v1/account", token: token).status == 200)

            let ended = try await api.send(.delete, "/admin/api/accounts/\(accountId)/sessions", headers: basic())
            #expect(ended.status == 200 && ended.body["ended"] as? Int == 2, "\(ended.text)")
            #expect(try await api.send(.get, "/v1/account", token: token).status == 401)
            #expect(try await api.send(.get, "/v1/account", token: secondToken).status == 401)
            let records = try await store.log.readStream(accountId, from: 1, limit: 100)
            let endings = records.filter { $0.type == "auth.session-ended" }
            #expect(endings.count == 2 && endings.allSatisfy { $0.metadata.actor == "admin:grace" })
            #expect(try await api.send(.delete, "/admin/api/accounts/nobody/sessions", headers: basic()).status == 404)

            // Erasure needs a reason and JSON.
            #expect(try await api.send(.post, "/admin/api/accounts/\(accountId)/erase", json: #"{"reason":"  "}"#, headers: basic()).status == 400)
            #expect(try await api.send(.post, "/admin/api/accounts/\(accountId)/erase", json: "{}", headers: basic()).status == 400)
            let tooLong = String(repeating: "r", count: 501)
            #expect(
                try await api.send(.post, "/admin/api/accounts/\(accountId)/erase", json: #"{"reason":"\#(tooLong)"}"#, headers: basic()).status
                    == 400)
            #expect(try await api.send(.post, "/admin/api/accounts/nobody/erase", json: #"{"reason":"asked"}"#, headers: basic()).status == 404)
            let erased = try await api.send(
                .post, "/admin/api/accounts/\(accountId)/erase", json: #"{"reason":"the owner asked by mail"}"#, headers: basic())
            #expect(erased.status == 204, "\(erased.text)")
            let state = try #require(try await store.accounts.load(accountId))
            #expect(state.isDeleted)
            #expect(try await store.accounts.accountId(forUserId: "ada@example.org") == nil)
            let deletion = try #require(try await store.log.readStream(accountId, from: 1, limit: 100).last)
            #expect(deletion.type == "account.deleted" && deletion.metadata.actor == "admin:grace")
            // Once erased, the account is no more: a second erasure is 404, and the audit has one of each.
            #expect(
                try await api.send(.post, "/admin/api/accounts/\(accountId)/erase", json: #"{"reason":"again"}"#, headers: basic()).status == 404)
            let audit = try await api.send(.get, "/admin/api/audit", headers: basic())
            let actions = try #require(JSONSerialization.jsonObject(with: Data(audit.text.utf8)) as? [[String: Any]])
            let kinds = actions.compactMap { $0["action"] as? String }
            #expect(kinds.filter { $0 == "admin.sessions-ended" }.count == 1 && kinds.filter { $0 == "admin.account-erased" }.count == 1, "\(kinds)")
            let erasure = try #require(try await store.adminActions().first { $0.action.typeName == "admin.account-erased" })
            #expect(erasure.action == .accountErased(accountId: accountId, reason: "the owner asked by mail"))
            #expect(erasure.admin == "grace")
        }
    }

    @Test("admin disable and enable: sign-in answered 429 locked-out meanwhile, the summary says so, each audited")
    func disableAndEnable() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            let login = #"{"userId":"ada@example.org","password":"correct horse battery"}"#
            #expect(try await api.send(.post, "/admin/api/accounts/\(accountId)/disable", json: "{}", headers: basic()).status == 400)
            let disabled = try await api.send(
                .post, "/admin/api/accounts/\(accountId)/disable", json: #"{"reason":"a support ticket"}"#, headers: basic())
            #expect(disabled.status == 200 && disabled.body["ended"] as? Int == 1, "\(disabled.text)")
            #expect(try await api.send(.get, "/v1/account", token: token).status == 401)
            let refused = try await api.send(.post, "/v1/sessions", json: login)
            #expect(refused.status == 429 && refused.problemType == "urn:spezi-account-store:problem:locked-out", "\(refused.text)")
            #expect(refused.headers[.retryAfter] != nil)
            let summary = try await api.send(.get, "/admin/api/accounts/\(accountId)", headers: basic())
            #expect(summary.body["disabled"] as? Bool == true)

            #expect(
                try await api.send(.post, "/admin/api/accounts/\(accountId)/enable", json: #"{"reason":"resolved"}"#, headers: basic()).status == 204)
            #expect(try await api.send(.post, "/v1/sessions", json: login).status == 201)
            #expect(try await api.send(.get, "/admin/api/accounts/\(accountId)", headers: basic()).body["disabled"] as? Bool == false)
            #expect(try await api.send(.post, "/admin/api/accounts/nobody/disable", json: #"{"reason":"x"}"#, headers: basic()).status == 404)
            let kinds = try await store.adminActions().map(\.action)
            #expect(kinds.contains(.accountDisabled(accountId: accountId, reason: "a support ticket")))
            #expect(kinds.contains(.accountEnabled(accountId: accountId, reason: "resolved")))
        }
    }

    @Test("an account's summary: its state from the log without personal values, not recorded as a viewing; 404 for no account")
    func summary() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            let (_, accountId) = try await api.signup("ada@example.org")
            try await store.accounts.append([.loginFailed(reason: "wrongPassword")], to: accountId, expectedVersion: .any)
            try await store.requestPasswordReset(userId: "ada@example.org")
            let (_, goneId) = try await api.signup("gone@example.org")
            try await store.delete(goneId)
            try await store.waitUntilCaughtUp()

            let summary = try await api.send(.get, "/admin/api/accounts/\(accountId)", headers: basic())
            #expect(summary.status == 200)
            #expect(summary.body["accountId"] as? String == accountId && summary.body["deleted"] as? Bool == false)
            #expect(summary.body["anonymous"] as? Bool == false && summary.body["applied"] as? Bool == true)
            #expect(summary.body["version"] as? Int == Int(try await store.log.streamVersion(accountId) ?? 0))
            #expect(summary.body["failedLogins"] as? Int == 1 && summary.body["lastFailedLogin"] is String)
            #expect(summary.body["openSessions"] as? Int == 1 && summary.body["openPasswordResets"] as? Int == 1)
            #expect(!summary.text.contains("ada@example.org"))

            let gone = try await api.send(.get, "/admin/api/accounts/\(goneId)", headers: basic())
            #expect(gone.body["deleted"] as? Bool == true && gone.body["openSessions"] as? Int == 0)
            #expect(gone.body["lastFailedLogin"] == nil)
            for missing in ["nobody", "%24admin"] {
                let refused = try await api.send(.get, "/admin/api/accounts/\(missing)", headers: basic())
                #expect(refused.status == 404 && refused.problemType == "urn:spezi-account-store:problem:no-such-account")
            }
            #expect(try await api.send(.get, "/admin/api/accounts/\(accountId)").status == 401)
            #expect(try await api.send(.delete, "/admin/api/accounts/\(accountId)", headers: basic()).headers[.allow] == "GET")
            // No personal values were shown, so nothing was recorded.
            #expect(try await store.log.readStream(AccountStore.adminStream, from: 1, limit: 10).isEmpty)
        }
    }

    @Test("activity per hour: signups, deletions and failed logins land in the current hour's point")
    func activity() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            _ = try await api.signup("a@example.org")
            let (_, second) = try await api.signup("b@example.org")
            try await store.delete(second)
            let wrong = try await api.send(.post, "/v1/sessions", json: #"{"userId":"a@example.org","password":"wrong"}"#)
            #expect(wrong.status == 401)
            // A failed login's record is appended after its answer (it is not waited for).
            await store.settleBackgroundWrites()
            let answer = try await api.send(.get, "/admin/api/activity?bucket=hour&count=3", headers: basic())
            let series = try #require(answer.body["series"] as? [[String: Any]])
            #expect(series.count == 3)
            #expect(series.map { $0["signups"] as? Int } == [0, 0, 2])
            #expect(series.last?["deletions"] as? Int == 1 && series.last?["failedLogins"] as? Int == 1)
            let days = try await api.send(.get, "/admin/api/activity?bucket=day&count=7", headers: basic())
            #expect((days.body["series"] as? [[String: Any]])?.count == 7)
            #expect(try await api.send(.get, "/admin/api/activity?bucket=week", headers: basic()).status == 400)
            #expect(try await api.send(.get, "/admin/api/activity?count=0", headers: basic()).status == 400)
        }
    }

    @Test("the log's state; verify and rebuild run as jobs with progress, and their outcomes are audit events")
    func verifyAndRebuild() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            for index in 0..<5 { _ = try await api.signup("user\(index)@example.org") }
            let before = try await api.send(.get, "/admin/api/log", headers: basic())
            #expect(before.body["records"] as? Int == Int(try await store.log.lastPosition()))
            #expect((before.body["headHash"] as? String)?.count == 64 && before.body["lastVerification"] == nil)
            let names = (before.body["projections"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(names?.contains("account-details") == true)

            let started = try await api.send(.post, "/admin/api/verify", headers: basic())
            #expect(started.status == 202 && started.body["kind"] as? String == "verify")
            let verified = try await finished(api, started, basic())
            #expect(verified.body["state"] as? String == "finished" && (verified.body["result"] as? String)?.hasPrefix("intact") == true)
            #expect(verified.body["done"] as? Int == verified.body["total"] as? Int)
            let after = try await api.send(.get, "/admin/api/log", headers: basic())
            let last = try #require(after.body["lastVerification"] as? [String: Any])
            #expect(last["intact"] as? Bool == true && last["admin"] as? String == "grace" && last["recordsChecked"] as? Int ?? 0 >= 10)

            let rebuild = try await api.send(.post, "/admin/api/projections/account-details/rebuild", headers: basic())
            #expect(rebuild.status == 202)
            let rebuilt = try await finished(api, rebuild, basic())
            #expect(rebuilt.body["state"] as? String == "finished")
            let user3 = try #require(try await store.resolve("user3@example.org"))
            #expect(try store.details(of: user3)?.userId == "user3@example.org")
            #expect(try await api.send(.post, "/admin/api/projections/nothing/rebuild", headers: basic()).status == 404)
            #expect(try await api.send(.get, "/admin/api/jobs/nope", headers: basic()).status == 404)

            let audit = try await store.adminActions()
            #expect(audit.map(\.action.typeName) == ["admin.rebuild-finished", "admin.rebuild-started", "admin.verified"])
            #expect(audit.allSatisfy { $0.admin == "grace" })
        }
    }
}

extension HTTPFields {
    /// Both sets of fields.
    fileprivate static func + (lhs: HTTPFields, rhs: HTTPFields) -> HTTPFields {
        var fields = lhs
        fields.append(contentsOf: rhs)
        return fields
    }
}
