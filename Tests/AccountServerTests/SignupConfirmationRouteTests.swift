//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import SpeziAccount
import SpeziAccountStore
import Testing

@Suite("Account server: confirmed signups reveal nothing about which user ids exist")
struct SignupConfirmationRouteTests {
    private func confirming() -> AccountServerConfiguration {
        var configuration = AccountServerConfiguration()
        configuration.confirmsSignups = true
        return configuration
    }

    private func signupJSON(_ userId: String, password: String = "correct horse battery") -> String {
        #"{"userId":"\#(userId)","password":"\#(password)","name":{"givenName":"Ada"}}"#
    }

    @Test("a free and a taken user id get the same 202; the token signs the new account in, once")
    func sameAnswer() async throws {
        let fixture = ServerFixture()
        try await fixture.withServer(configuration: confirming()) { api, store in
            // A taken user id, created directly in the store.
            _ = try await store.signup(
                {
                    var details = AccountDetails()
                    details.userId = "taken@example.org"
                    details.password = "the owner's password"
                    details.name = PersonNameComponents(givenName: "Owner")
                    return details
                }())
            let head = try await store.log.lastPosition()

            let free = try await api.send(.post, "/v1/accounts", json: signupJSON("free@example.org"))
            let taken = try await api.send(.post, "/v1/accounts", json: signupJSON("taken@example.org"))
            #expect(free.status == 202 && taken.status == 202)
            #expect(free.comparableText == taken.comparableText && free.body["status"] as? String == "confirmation-sent")
            #expect(free.token == nil && taken.token == nil)
            #expect(try await store.log.lastPosition() == head)

            let messages = fixture.signups.withLock { $0 }
            #expect(messages.count == 2)
            #expect(messages.last == .alreadyRegistered(userId: "taken@example.org"))
            guard case let .confirm(userId, token, _) = messages.first else {
                Issue.record("no confirmation for the free user id: \(messages)")
                return
            }
            #expect(userId == "free@example.org")

            let confirmed = try await api.send(.post, "/v1/accounts/confirm", json: #"{"token":"\#(token)"}"#)
            #expect(confirmed.status == 201)
            let session = try #require(confirmed.token)
            let accountId = try #require(confirmed.account?["accountId"] as? String)
            let details = try await api.send(.get, "/v1/account", token: session)
            #expect(details.status == 200 && details.details?["userId"] as? String == "free@example.org")
            #expect(try await eventTypes(store, accountId) == ["account.created", "auth.session-started"])

            let replay = try await api.send(.post, "/v1/accounts/confirm", json: #"{"token":"\#(token)"}"#)
            #expect(replay.status == 400 && replay.problemType == "urn:spezi-account-store:problem:invalid-signup-token")
            let forged = try await api.send(.post, "/v1/accounts/confirm", json: #"{"token":"AAAA"}"#)
            #expect(forged.status == 400 && forged.comparableText == replay.comparableText)
            // Invalid details are refused before any message, as for a direct signup.
            let invalid = try await api.send(.post, "/v1/accounts", json: #"{"userId":"x@example.org"}"#)
            #expect(invalid.status == 422)
            #expect(fixture.signups.withLock { $0.count } == 2)
        }
    }

    @Test("an anonymous account's upgrade waits for its confirmation and keeps the account id")
    func upgrade() async throws {
        let fixture = ServerFixture()
        try await fixture.withServer(configuration: confirming()) { api, _ in
            let anonymous = try await api.send(.post, "/v1/accounts/anonymous")
            let token = try #require(anonymous.token)
            let accountId = try #require(anonymous.account?["accountId"] as? String)
            let requested = try await api.send(.post, "/v1/account/upgrade", token: token, json: signupJSON("up@example.org"))
            #expect(requested.status == 202)
            #expect(try await api.send(.get, "/v1/account", token: token).body["isAnonymous"] as? Bool == true)
            guard case let .confirm(_, confirmation, _) = fixture.signups.withLock({ $0.last }) else {
                Issue.record("no confirmation was sent")
                return
            }
            let confirmed = try await api.send(.post, "/v1/accounts/confirm", json: #"{"token":"\#(confirmation)"}"#)
            #expect(confirmed.status == 201)
            #expect(confirmed.account?["accountId"] as? String == accountId && confirmed.account?["isAnonymous"] as? Bool == false)
        }
    }

    @Test("limits: signups naming one user id and user-id changes of one account are answered 429; confirm is 404 when off")
    func limits() async throws {
        let fixture = ServerFixture()
        try await fixture.withServer(configuration: confirming()) { api, store in
            let statuses = try await (0..<4).asyncMap { index in
                try await api.send(.post, "/v1/accounts", json: signupJSON(index.isMultiple(of: 2) ? "Probe@example.org" : "probe@example.org"))
                    .status
            }
            #expect(statuses == [202, 202, 202, 429])
            #expect(fixture.signups.withLock { $0.count } == 3)

            var details = AccountDetails()
            details.userId = "mover@example.org"
            details.password = "correct horse battery"
            details.name = PersonNameComponents(givenName: "Mover")
            let accountId = try await store.signup(details).accountId
            let session = try await store.startSession(for: accountId, validity: .seconds(600))
            var answers: [Int] = []
            for index in 0..<4 {
                let change = #"{"set":{"userId":"someone\#(index)@example.org"},"currentPassword":"correct horse battery"}"#
                answers.append(try await api.send(.patch, "/v1/account", token: session.token, json: change).status)
            }
            #expect(answers == [200, 200, 200, 429])
        }
        try await ServerFixture().withServer { api, _ in
            let off = try await api.send(.post, "/v1/accounts/confirm", json: #"{"token":"AAAA"}"#)
            #expect(off.status == 404 && off.problemType == "urn:spezi-account-store:problem:signup-confirmation-off")
        }
    }
}

extension Range where Bound == Int {
    /// Runs `body` for each element in order.
    fileprivate func asyncMap<T>(_ body: (Int) async throws -> T) async throws -> [T] {
        var results: [T] = []
        for element in self { results.append(try await body(element)) }
        return results
    }
}
