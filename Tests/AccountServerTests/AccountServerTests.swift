//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import SpeziAccount
import SpeziAccountStore
import Testing

@Suite("Account server: the routes over a real store")
struct AccountServerTests {
    @Test("signup opens a session that reads the account; the stream holds account.created and auth.session-started")
    func signupAndDetails() async throws {
        try await ServerFixture().withServer { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            let details = try await api.send(.get, "/v1/account", token: token)
            #expect(details.status == 200)
            #expect(details.body["accountId"] as? String == accountId)
            #expect(details.details?["userId"] as? String == "ada@example.org")
            #expect((details.details?["name"] as? [String: Any])?["givenName"] as? String == "Ada")
            #expect(details.details?["password"] == nil)
            #expect(try await eventTypes(store, accountId) == ["account.created", "auth.session-started"])
            #expect(!details.text.contains("scrypt"))
        }
    }

    @Test("login: a wrong password and an unknown user id get the same answer; logout ends the session for good")
    func loginAndLogout() async throws {
        try await ServerFixture().withServer { api, store in
            let (first, accountId) = try await api.signup("ada@example.org")
            let wrong = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"nope"}"#)
            let unknown = try await api.send(.post, "/v1/sessions", json: #"{"userId":"nobody@example.org","password":"nope"}"#)
            #expect(wrong.status == 401 && unknown.status == 401)
            #expect(wrong.comparableText == unknown.comparableText)
            #expect(wrong.problemType == "urn:spezi-account-store:problem:wrong-credentials")
            #expect(wrong.headers[.wwwAuthenticate] == "Bearer")

            let login = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
            #expect(login.status == 201)
            let second = try #require(login.token)
            #expect(second != first && second.hasPrefix("\(accountId)."))

            #expect(try await api.send(.delete, "/v1/sessions/current", token: second).status == 204)
            #expect(try await api.send(.get, "/v1/account", token: second).status == 401)
            #expect(try await api.send(.delete, "/v1/sessions/current", token: second).status == 401)
            // The other session is untouched.
            #expect(try await api.send(.get, "/v1/account", token: first).status == 200)
            #expect(
                try await eventTypes(store, accountId) == [
                    "account.created", "auth.session-started", "auth.login-failed", "auth.login-succeeded", "auth.session-started",
                    "auth.session-client", "auth.session-ended", "auth.logged-out"
                ])
        }
    }

    @Test("bad requests: malformed JSON, missing and mistyped fields, empty and oversized bodies, unknown keys (rule violations: ServerErrorTests)")
    func badRequests() async throws {
        try await ServerFixture().withServer(configuration: configuration(maxBodyBytes: 2_048)) { api, store in
            let malformed = try await api.send(.post, "/v1/sessions", json: #"{"userId": "#)
            #expect(malformed.status == 400)
            #expect(malformed.problemType == "urn:spezi-account-store:problem:malformed-request")
            #expect(malformed.body["detail"] as? String == "the body is not valid JSON")

            let missing = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org"}"#)
            #expect(missing.status == 400 && missing.body["detail"] as? String == "password is missing")
            let mistyped = try await api.send(.post, "/v1/sessions", json: #"{"userId":7,"password":"x"}"#)
            #expect(mistyped.status == 400 && mistyped.body["detail"] as? String == "userId has the wrong type")
            let empty = try await api.send(.post, "/v1/accounts")
            #expect(empty.status == 400)

            let huge = String(repeating: "x", count: 4_096)
            let oversized = try await api.send(.post, "/v1/accounts", json: #"{"userId":"a@example.org","password":"\#(huge)"}"#)
            #expect(oversized.status == 413)
            #expect(oversized.problemType == "urn:spezi-account-store:problem:body-too-large")

            let unknownKey = try await api.send(.post, "/v1/accounts", json: #"{"userId":"a@example.org","password":"long enough 1","shoeSize":44}"#)
            #expect(unknownKey.status == 422)
            #expect(unknownKey.body["detail"] as? String == "unknown keys: shoeSize")

            let noPassword = try await api.send(.post, "/v1/accounts", json: #"{"userId":"a@example.org"}"#)
            #expect(noPassword.status == 422)
            #expect(noPassword.problemType == "urn:spezi-account-store:problem:missing-value")

            let badName = try await api.send(.post, "/v1/accounts", json: #"{"userId":"a@example.org","password":"long enough 1","name":"Ada"}"#)
            #expect(badName.status == 400)

            // Nothing of the above reached the log.
            #expect(try await store.log.lastPosition() == 0)
            let notFound = try await api.send(.get, "/v1/nothing")
            #expect(notFound.status == 404)
        }
    }

    @Test("tokens: missing, malformed, forged, expired and deleted-account tokens are refused alike")
    func tokens() async throws {
        let fixture = ServerFixture()
        try await fixture.withServer(configuration: configuration(sessionValidity: .seconds(600))) { api, _ in
            let (token, accountId) = try await api.signup("ada@example.org")
            for bad in [nil, "", "garbage", "\(accountId).\(String(repeating: "A", count: 43))", "nobody.\(token.split(separator: ".")[1])"] {
                let answer = try await api.send(.get, "/v1/account", token: bad)
                #expect(answer.status == 401, "\(bad ?? "nil")")
                #expect(answer.problemType == "urn:spezi-account-store:problem:invalid-session")
            }
            #expect(try await api.send(.get, "/v1/account", token: token).status == 200)
            fixture.advance(seconds: 601)
            #expect(try await api.send(.get, "/v1/account", token: token).status == 401)
        }
    }

    @Test("changes: values without step-up; a new password needs the current one, ends every session and hands out a new one")
    func modifications() async throws {
        try await ServerFixture().withServer { api, store in
            let (first, accountId) = try await api.signup("ada@example.org")
            let login = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
            let second = try #require(login.token)

            // Each read shows the latest change (the encoded answer is kept for one version of the account).
            #expect(try await api.send(.get, "/v1/account", token: first).details?["genderIdentity"] == nil)
            let gender = try await api.send(.patch, "/v1/account", token: first, json: #"{"set":{"genderIdentity":"female"}}"#)
            #expect(gender.status == 200)
            #expect(gender.details?["genderIdentity"] as? String == "female")
            #expect(gender.body["session"] == nil)
            // The answer wraps the very JSON the next read answers (made once, for both).
            let afterGender = try await api.send(.get, "/v1/account", token: first)
            #expect(afterGender.details?["genderIdentity"] as? String == "female")
            #expect(gender.text == #"{"account":"# + afterGender.text + "}")
            #expect(try await api.send(.get, "/v1/account", token: second).details?["genderIdentity"] as? String == "female")

            let removed = try await api.send(.patch, "/v1/account", token: first, json: #"{"remove":["genderIdentity"]}"#)
            #expect(removed.status == 200 && removed.details?["genderIdentity"] == nil)
            #expect(try await api.send(.get, "/v1/account", token: first).details?["genderIdentity"] == nil)

            let noStepUp = try await api.send(.patch, "/v1/account", token: first, json: #"{"set":{"password":"a new secret 42"}}"#)
            #expect(noStepUp.status == 403)
            #expect(noStepUp.problemType == "urn:spezi-account-store:problem:reauthentication-required")
            let wrongStepUp = try await api.send(
                .patch, "/v1/account", token: first, json: #"{"set":{"userId":"new@example.org"},"currentPassword":"nope"}"#)
            #expect(wrongStepUp.status == 401)

            let changed = try await api.send(
                .patch, "/v1/account", token: first, json: #"{"set":{"password":"a new secret 42"},"currentPassword":"correct horse battery"}"#)
            #expect(changed.status == 200)
            let third = try #require((changed.body["session"] as? [String: Any])?["token"] as? String)
            #expect(try await api.send(.get, "/v1/account", token: first).status == 401)
            #expect(try await api.send(.get, "/v1/account", token: second).status == 401)
            #expect(try await api.send(.get, "/v1/account", token: third).status == 200)

            let events = try await store.log.readStream(accountId, from: 1, limit: 100)
            let ended = try events.compactMap { record -> String? in
                guard case let .sessionEnded(_, reason) = try store.accounts.event(from: record) else { return nil }
                return reason
            }
            #expect(ended == ["password-changed", "password-changed"])
            let oldPassword = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
            #expect(oldPassword.status == 401)
        }
    }

    @Test("deletion needs the current password, ends every session, and frees the user id")
    func deletion() async throws {
        try await ServerFixture().withServer { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            #expect(try await api.send(.delete, "/v1/account", token: token).status == 403)
            #expect(try await api.send(.delete, "/v1/account", token: token, json: #"{"currentPassword":"nope"}"#).status == 401)
            #expect(try await api.send(.delete, "/v1/account", token: token, json: #"{"currentPassword":"correct horse battery"}"#).status == 204)
            #expect(try await api.send(.get, "/v1/account", token: token).status == 401)
            let types = try await eventTypes(store, accountId)
            #expect(Array(types.suffix(2)) == ["auth.session-ended", "account.deleted"])
            let again = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
            #expect(again.status == 401)
            _ = try await api.signup("ada@example.org")
        }
    }

    @Test("password reset: the same answer for known and unknown user ids; a token works once and ends every session")
    func passwordReset() async throws {
        let fixture = ServerFixture()
        try await fixture.withServer { api, store in
            let (token, _) = try await api.signup("ada@example.org")
            let known = try await api.send(.post, "/v1/password-resets", json: #"{"userId":"ada@example.org"}"#)
            let unknown = try await api.send(.post, "/v1/password-resets", json: #"{"userId":"nobody@example.org"}"#)
            #expect(known.status == 202 && unknown.status == 202 && known.comparableText == unknown.comparableText)
            await store.settleBackgroundWrites()
            let reset = try #require(fixture.resets.withLock { $0.first })
            #expect(fixture.resets.withLock { $0.count } == 1)

            let completion = #"{"userId":"ada@example.org","token":"\#(reset.token)","newPassword":"brand new secret 7"}"#
            #expect(try await api.send(.post, "/v1/password-resets/complete", json: completion).status == 204)
            let replayed = try await api.send(.post, "/v1/password-resets/complete", json: completion)
            #expect(replayed.status == 400)
            #expect(replayed.problemType == "urn:spezi-account-store:problem:invalid-reset-token")
            #expect(try await api.send(.get, "/v1/account", token: token).status == 401)
            let login = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"brand new secret 7"}"#)
            #expect(login.status == 201)
        }
    }

    @Test("anonymous sign-in, upgrade keeping the account id, and deletion of an anonymous account without a password")
    func anonymous() async throws {
        try await ServerFixture().withServer { api, _ in
            let anonymous = try await api.send(.post, "/v1/accounts/anonymous")
            #expect(anonymous.status == 201)
            #expect(anonymous.account?["isAnonymous"] as? Bool == true)
            let token = try #require(anonymous.token)
            let accountId = try #require(anonymous.account?["accountId"] as? String)

            let other = try #require(try await api.send(.post, "/v1/accounts/anonymous").token)
            #expect(try await api.send(.delete, "/v1/account", token: other).status == 204)

            let upgraded = try await api.send(
                .post, "/v1/account/upgrade", token: token,
                json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
            #expect(upgraded.status == 200)
            #expect(upgraded.body["accountId"] as? String == accountId)
            #expect(upgraded.body["isAnonymous"] as? Bool == false)
            let again = try await api.send(
                .post, "/v1/account/upgrade", token: token,
                json: #"{"userId":"b@example.org","password":"correct horse battery","name":{"givenName":"B"}}"#)
            #expect(again.status == 409)
            #expect(again.problemType == "urn:spezi-account-store:problem:not-anonymous")
        }
    }

    @Test("lockout: the sixth attempt after five wrong passwords is answered 429 with Retry-After")
    func lockout() async throws {
        try await ServerFixture().withServer { api, _ in
            _ = try await api.signup("ada@example.org")
            for _ in 0..<5 {
                #expect(try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"nope"}"#).status == 401)
            }
            let locked = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
            #expect(locked.status == 429)
            #expect(locked.problemType == "urn:spezi-account-store:problem:locked-out")
            #expect(Int(locked.headers[.retryAfter] ?? "") ?? 0 > 0)
        }
    }

    @Test("rate limits: per user id (known or not, the same answers) and per client, 429 with Retry-After; nothing reaches the log")
    func rateLimits() async throws {
        var limited = AccountServerConfiguration()
        limited.rateLimits.loginsPerAccount = RateLimit(burst: 2, perMinute: 1)
        limited.rateLimits.signupsPerClient = RateLimit(burst: 2, perMinute: 1)
        limited.rateLimits.resetsPerAccount = RateLimit(burst: 1, perMinute: 1)
        let fixture = ServerFixture()
        try await fixture.withServer(configuration: limited) { api, store in
            // Signups first, one after the other: the bucket refills one a minute, which a loaded
            // machine could reach if other steps came between.
            let (_, accountId) = try await api.signup("ada@example.org")
            _ = try await api.signup("bea@example.org")
            let signup = try await api.send(.post, "/v1/accounts/anonymous")
            #expect(signup.status == 429)
            for userId in ["ada@example.org", "nobody@example.org"] {
                for _ in 0..<2 {
                    #expect(try await api.send(.post, "/v1/sessions", json: #"{"userId":"\#(userId)","password":"nope"}"#).status == 401)
                }
                let third = try await api.send(.post, "/v1/sessions", json: #"{"userId":"\#(userId)","password":"nope"}"#)
                #expect(third.status == 429)
                #expect(third.problemType == "urn:spezi-account-store:problem:rate-limited")
                #expect((Int(third.headers[.retryAfter] ?? "") ?? 0) >= 1)
            }
            // Upper case is the same user id.
            #expect(try await api.send(.post, "/v1/sessions", json: #"{"userId":"ADA@example.org","password":"nope"}"#).status == 429)
            #expect(try await api.send(.post, "/v1/sessions", json: #"{"userId":"other@example.org","password":"nope"}"#).status == 401)
            await store.settleBackgroundWrites()
            #expect(try await eventTypes(store, accountId).filter { $0 == "auth.login-failed" }.count == 2)

            // Past the user id's limit a request is answered the same, and no new link goes out.
            #expect(try await api.send(.post, "/v1/password-resets", json: #"{"userId":"ada@example.org"}"#).status == 202)
            #expect(try await api.send(.post, "/v1/password-resets", json: #"{"userId":"ada@example.org"}"#).status == 202)
            #expect(try await api.send(.post, "/v1/password-resets", json: #"{"userId":"nobody@example.org"}"#).status == 202)
            await store.settleBackgroundWrites()
            #expect(fixture.resets.withLock { $0.map(\.userId) } == ["ada@example.org"])
        }
    }

    @Test("history: the account's own events with changes, the password shown as ***, never its hash")
    func history() async throws {
        try await ServerFixture().withServer { api, _ in
            let (token, accountId) = try await api.signup("ada@example.org")
            _ = try await api.send(.patch, "/v1/account", token: token, json: #"{"set":{"genderIdentity":"female"}}"#)
            let history = try await api.send(.get, "/v1/account/history", token: token)
            #expect(history.status == 200)
            #expect(history.body["accountId"] as? String == accountId)
            let entries = try #require(history.body["entries"] as? [[String: Any]])
            #expect(entries.map { $0["type"] as? String } == ["account.created", "auth.session-started", "account.details-modified"])
            let changes = try #require(entries[2]["changes"] as? [[String: Any]])
            #expect(changes.first?["key"] as? String == "genderIdentity")
            #expect(changes.first?["new"] as? String == "\"female\"")
            #expect(history.text.contains("***") && !history.text.contains("scrypt"))
        }
    }

    @Test("the OpenAPI document lists exactly the operations the server answers, and is served as it is in the repository")
    func openAPIDocument() async throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AccountServer/openapi.yaml")
        let text = try String(contentsOf: file, encoding: .utf8)
        let documented = Set(OpenAPIOperations.parse(text).map { "\($0.method) \($0.path)" })
        let served = Set(AccountServer.operations.map { "\($0.method) \($0.path)" })
        #expect(documented == served)
        // Each operation once: no method and path in both tables, or twice in one.
        #expect(served.count == AccountServer.operations.count && !served.isEmpty)
        try await ServerFixture().withServer { api, _ in
            let answer = try await api.send(.get, "/openapi.yaml")
            #expect(answer.status == 200)
            #expect(answer.text == text)
        }
    }
}

/// A server configuration with some values changed.
func configuration(sessionValidity: Duration? = nil, maxBodyBytes: Int? = nil) -> AccountServerConfiguration {
    var configuration = AccountServerConfiguration()
    if let sessionValidity { configuration.sessionValidity = sessionValidity }
    if let maxBodyBytes { configuration.maxBodyBytes = maxBodyBytes }
    return configuration
}

/// The operations of an OpenAPI document: the methods under each path of `paths:` (enough of YAML
/// for the document this repository keeps: two-space indentation, paths at level one).
enum OpenAPIOperations {
    static func parse(_ text: String) -> [(method: String, path: String)] {
        var operations: [(String, String)] = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if !line.hasPrefix(" ") && !line.isEmpty { break }
            if line.hasPrefix("  /") && line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    ") && !line.hasPrefix("     "), let path {
                let word = line.dropFirst(4).prefix { $0 != ":" }
                if ["get", "post", "put", "patch", "delete"].contains(String(word)) { operations.append((word.uppercased(), path)) }
            }
        }
        return operations
    }
}
