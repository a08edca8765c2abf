//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import SpeziAccount
import SpeziAccountStore
import Synchronization
import Testing

/// Each error the account API can answer, provoked for real, with its status and problem type;
/// and nothing of a refused request in the log.
@Suite("The account API's errors, each provoked")
struct ServerErrorTests {
    static let problem = "urn:spezi-account-store:problem:"

    /// A command tries once: a change that meets another is refused with `tooMuchContention`.
    static func oneTry(_ options: inout AccountStoreOptions) {
        options.maxConflictRetries = 1
    }

    @Test("409 credentials-taken, 422 invalid-value, removing-required-key, account-id-changed and immutable-key; nothing written")
    func ruleViolations() async throws {
        let values: AccountValueConfiguration = [
            .requires(\.userId), .requires(\.password), .requires(\.name), .collects(\.genderIdentity), .manual(\.dateOfBirth)
        ]
        try await ServerFixture().withServer(values: values) { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            let head = try await store.log.lastPosition()

            let taken = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"ADA@example.org","password":"long enough 1","name":{"givenName":"Eve"}}"#)
            #expect(taken.status == 409 && taken.problemType == Self.problem + "credentials-taken", "\(taken.text)")

            let shortPassword = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"bob@example.org","password":"short","name":{"givenName":"Bob"}}"#)
            #expect(shortPassword.status == 422 && shortPassword.problemType == Self.problem + "invalid-value", "\(shortPassword.text)")
            #expect((shortPassword.body["detail"] as? String)?.contains("8 characters") == true)

            let badUserId = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"bob\u0007@example.org","password":"long enough 1","name":{"givenName":"Bob"}}"#)
            #expect(badUserId.status == 422 && badUserId.problemType == Self.problem + "invalid-value", "\(badUserId.text)")

            let removeRequired = try await api.send(.patch, "/v1/account", token: token, json: #"{"remove":["name"]}"#)
            #expect(removeRequired.status == 422 && removeRequired.problemType == Self.problem + "removing-required-key", "\(removeRequired.text)")

            let newAccountId = try await api.send(.patch, "/v1/account", token: token, json: #"{"set":{"accountId":"someone-else"}}"#)
            #expect(newAccountId.status == 422 && newAccountId.problemType == Self.problem + "account-id-changed", "\(newAccountId.text)")

            // dateOfBirth is configured `.manual`: the server manages it, clients cannot set it.
            let manual = try await api.send(.patch, "/v1/account", token: token, json: #"{"set":{"dateOfBirth":0}}"#)
            #expect(manual.status == 422 && manual.problemType == Self.problem + "immutable-key", "\(manual.text)")
            #expect((manual.body["detail"] as? String)?.contains("dateOfBirth") == true, "\(manual.text)")

            #expect(try await store.log.lastPosition() == head, "no refused request reached the log")
            #expect(try await eventTypes(store, accountId) == ["account.created", "auth.session-started"])
        }
    }

    @Test("a value past the store's size limit: 422 invalid-details naming the key, before anything is hashed or written")
    func oversizedValue() async throws {
        var configuration = AccountServerConfiguration()
        configuration.maxBodyBytes = 256 * 1024
        try await ServerFixture().withServer(configuration: configuration) { api, store in
            let long = String(repeating: "n", count: 70_000)
            let answer = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"ada@example.org","password":"long enough 1","name":{"givenName":"\#(long)"}}"#)
            #expect(answer.status == 422 && answer.problemType == Self.problem + "invalid-details", "\(answer.text.prefix(300))")
            #expect((answer.body["detail"] as? String)?.contains("name") == true, "\(answer.text.prefix(300))")
            #expect(try await store.log.lastPosition() == 0)
        }
    }

    @Test("503 contention with Retry-After when the account changed under the change (one try allowed); the contended change wrote nothing")
    func contention() async throws {
        // Another writer appends to the account between the PATCH's read and its append, once.
        let interloper = Mutex<AccountStore?>(nil)
        let options: (inout AccountStoreOptions) -> Void = { options in
            Self.oneTry(&options)
            options.defences.beforeChangeAppend = { accountId in
                guard let other = interloper.withLock({ $0.take() }) else { return }
                _ = try? await other.accounts.append([.loginFailed(reason: "wrongPassword")], to: accountId, expectedVersion: .any)
            }
        }
        try await ServerFixture().withServer(storeOptions: options) { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            interloper.withLock { $0 = store }
            let body = #"{"set":{"name":{"givenName":"Refused"}}}"#
            let contended = try await api.send(.patch, "/v1/account", token: token, json: body)
            #expect(contended.status == 503 && contended.problemType == Self.problem + "contention", "\(contended.text)")
            #expect(contended.headers[.retryAfter] == "1")
            #expect(try await eventTypes(store, accountId).filter { $0 == "account.details-modified" }.isEmpty, "a 503 wrote nothing")
            // With nobody in between, the same change goes through.
            let retried = try await api.send(.patch, "/v1/account", token: token, json: body)
            #expect(retried.status == 200, "\(retried.text)")
            #expect(try await eventTypes(store, accountId).filter { $0 == "account.details-modified" }.count == 1)
        }
    }

    @Test("500 internal-error, without details, when the store is closed under the server")
    func internalError() async throws {
        try await ServerFixture().withServer { api, store in
            let (token, _) = try await api.signup("ada@example.org")
            await store.close()
            let answer = try await api.send(.patch, "/v1/account", token: token, json: #"{"set":{"name":{"givenName":"Late"}}}"#)
            #expect(answer.status == 500 && answer.problemType == Self.problem + "internal-error", "\(answer.text)")
            #expect(answer.body["detail"] == nil, "an internal error tells nothing of its cause")
            #expect(answer.headers[.contentType] == "application/problem+json")
        }
    }
}
