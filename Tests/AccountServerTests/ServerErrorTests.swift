//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import SpeziAccount
import SpeziAccountStore
import Testing

/// Each error the account API can answer, provoked for real, with its status and problem type;
/// and nothing of a refused request in the log.
@Suite("The account API's errors, each provoked")
struct ServerErrorTests {
    static let problem = "urn:spezi-account-store:problem:"

    /// A command tries once: a change that meets another is refused with `tooMuchContention`.
    /// The account's change budget is lifted: rounds in which no change met another (a relaxed
    /// log commits a lone change on its caller's thread, which narrows the window) would
    /// otherwise spend it and turn the later rounds into 429s.
    static func oneTry(_ options: inout AccountStoreOptions) {
        options.maxConflictRetries = 1
        options.limits.changesPerAccountPerHour = nil
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

    @Test("503 contention with Retry-After when the account keeps changing (one try allowed); a contended change wrote nothing")
    func contention() async throws {
        try await ServerFixture().withServer(storeOptions: Self.oneTry) { api, store in
            let (token, accountId) = try await api.signup("ada@example.org")
            var contended = 0
            var changed = 0
            for round in 0..<20 where contended == 0 {
                // Status, problem type and Retry-After of each answer.
                let answers = try await withThrowingTaskGroup(of: (Int, String?, String?, String).self) { group in
                    for writer in 0..<24 {
                        group.addTask {
                            let answer = try await api.send(
                                .patch, "/v1/account", token: token, json: #"{"set":{"name":{"givenName":"R\#(round)W\#(writer)"}}}"#)
                            return (answer.status, answer.problemType, answer.headers[.retryAfter], answer.text)
                        }
                    }
                    return try await group.reduce(into: [(Int, String?, String?, String)]()) { $0.append($1) }
                }
                for (status, type, retryAfter, text) in answers {
                    switch status {
                    case 200: changed += 1
                    case 503:
                        #expect(type == Self.problem + "contention" && retryAfter == "1", "\(text)")
                        contended += 1
                    default: Issue.record("unexpected answer \(status): \(text)")
                    }
                }
            }
            #expect(contended > 0, "no change met another in 20 rounds of 24")
            // Every 200 is one change in the log; no 503 wrote anything.
            #expect(try await eventTypes(store, accountId).filter { $0 == "account.details-modified" }.count == changed)
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
