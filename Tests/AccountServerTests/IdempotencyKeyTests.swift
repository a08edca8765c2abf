//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import SpeziAccountStore
import Testing

/// `Idempotency-Key`: a repeated request gets the first answer and appends nothing.
@Suite("Idempotency-Key")
struct IdempotencyKeyTests {
    static let key = HTTPField.Name("Idempotency-Key")!
    static let signupBody = #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#

    @Test("a repeated signup answers 201 with the same account and token; the log holds one account.created and one session")
    func repeatedSignup() async throws {
        try await ServerFixture().withServer { client, store in
            let first = try await client.send(.post, "/v1/accounts", json: Self.signupBody, headers: [Self.key: "signup-1"])
            let head = try await store.log.lastPosition()
            let again = try await client.send(.post, "/v1/accounts", json: Self.signupBody, headers: [Self.key: "signup-1"])
            #expect(first.status == 201 && again.status == 201, "\(again.text)")
            let accountId = try #require(first.account?["accountId"] as? String)
            #expect(again.account?["accountId"] as? String == accountId)
            #expect(again.token == first.token && first.token != nil)
            #expect(again.body["expiresAt"] as? String == first.body["expiresAt"] as? String)
            #expect(try await store.log.lastPosition() == head, "the repeat appended nothing")
            #expect(try await eventTypes(store, accountId) == ["account.created", "auth.session-started"])
            // The repeated answer's token works.
            #expect(try await client.send(.get, "/v1/account", token: again.token).status == 200)

            // Without the key, or with another key, the same signup meets the taken user id.
            #expect(try await client.send(.post, "/v1/accounts", json: Self.signupBody).problemType?.hasSuffix(":credentials-taken") == true)
            #expect(
                try await client.send(.post, "/v1/accounts", json: Self.signupBody, headers: [Self.key: "signup-2"]).status == 409)
            // The same key with another body (another password) is another request: 409, no session.
            let other = #"{"userId":"ada@example.org","password":"another horse battery","name":{"givenName":"Ada"}}"#
            let reused = try await client.send(.post, "/v1/accounts", json: other, headers: [Self.key: "signup-1"])
            #expect(reused.status == 409 && reused.token == nil)
            #expect(try await store.log.lastPosition() == head)
        }
    }

    @Test("a repeated anonymous sign-in makes no second account and hands out no session: the key alone is no credential")
    func repeatedAnonymousSignIn() async throws {
        try await ServerFixture().withServer { client, store in
            let first = try await client.send(.post, "/v1/accounts/anonymous", headers: [Self.key: "anon-1"])
            let again = try await client.send(.post, "/v1/accounts/anonymous", headers: [Self.key: "anon-1"])
            let other = try await client.send(.post, "/v1/accounts/anonymous", headers: [Self.key: "anon-2"])
            #expect([first.status, again.status, other.status] == [Int]([201, 409, 201]))
            #expect(again.problemType == "urn:spezi-account-store:problem:idempotency-key-used")
            #expect(again.token == nil && first.token != nil && !again.text.contains(first.token ?? "-"))
            #expect(other.token != first.token)
            #expect(try await store.log.lastPosition() == 4, "two accounts, two sessions")
        }
    }

    @Test("a repeated password change with the token it ended answers 200 with the same new session; another token cannot replay it")
    func repeatedPasswordChange() async throws {
        try await ServerFixture().withServer { client, store in
            let (token, accountId) = try await client.signup("grace@example.org")
            let (otherToken, otherId) = try await client.signup("alan@example.org", password: "alan's own horse battery")
            let change = #"{"set":{"password":"a new horse battery"},"currentPassword":"correct horse battery"}"#
            let first = try await client.send(.patch, "/v1/account", token: token, json: change, headers: [Self.key: "change-1"])
            #expect(first.status == 200, "\(first.text)")
            let session = try #require(first.body["session"] as? [String: Any])
            let head = try await store.log.lastPosition()
            // The first change ended `token`'s session; the repeat still gets the first answer.
            let again = try await client.send(.patch, "/v1/account", token: token, json: change, headers: [Self.key: "change-1"])
            #expect(again.status == 200, "\(again.text)")
            #expect((again.body["session"] as? [String: Any])?["token"] as? String == session["token"] as? String)
            #expect(try await store.log.lastPosition() == head, "the repeat appended nothing")
            #expect(try await eventTypes(store, accountId).filter { $0 == "account.password-changed" }.count == 1)
            // Without the key, the ended token is refused; a token of another account cannot replay the key.
            #expect(try await client.send(.patch, "/v1/account", token: token, json: change).status == 401)
            #expect(try await client.send(.patch, "/v1/account", token: otherToken, json: change, headers: [Self.key: "change-1"]).status == 401)
            #expect(try await eventTypes(store, otherId).contains("account.password-changed") == false)
            // The new password works.
            let login = try await client.send(.post, "/v1/sessions", json: #"{"userId":"grace@example.org","password":"a new horse battery"}"#)
            #expect(login.status == 201)
        }
    }

    @Test("a repeated value change appends nothing and answers the same values")
    func repeatedValueChange() async throws {
        try await ServerFixture().withServer { client, store in
            let (token, accountId) = try await client.signup("grace@example.org")
            let change = #"{"set":{"name":{"givenName":"Grace"}}}"#
            let first = try await client.send(.patch, "/v1/account", token: token, json: change, headers: [Self.key: "v-1"])
            let head = try await store.log.lastPosition()
            let again = try await client.send(.patch, "/v1/account", token: token, json: change, headers: [Self.key: "v-1"])
            #expect(first.status == 200 && again.status == 200)
            #expect(again.text == first.text)
            #expect(try await store.log.lastPosition() == head)
            #expect(try await eventTypes(store, accountId).filter { $0 == "account.details-modified" }.count == 1)
        }
    }

    @Test("a repeated deletion answers 204 again; without the key it is 401")
    func repeatedDeletion() async throws {
        try await ServerFixture().withServer { client, store in
            let (token, accountId) = try await client.signup("grace@example.org")
            let body = #"{"currentPassword":"correct horse battery"}"#
            #expect(try await client.send(.delete, "/v1/account", token: token, json: body, headers: [Self.key: "del-1"]).status == 204)
            let head = try await store.log.lastPosition()
            #expect(try await client.send(.delete, "/v1/account", token: token, json: body, headers: [Self.key: "del-1"]).status == 204)
            #expect(try await store.log.lastPosition() == head)
            #expect(try await eventTypes(store, accountId).filter { $0 == "account.deleted" }.count == 1)
            #expect(try await client.send(.delete, "/v1/account", token: token, json: body).status == 401)
            #expect(try await client.send(.delete, "/v1/account", token: token, json: body, headers: [Self.key: "del-2"]).status == 401)
        }
    }

    @Test("a key that is empty, too long or not printable ASCII is refused with 400 before anything is done")
    func invalidKeys() async throws {
        try await ServerFixture().withServer { client, store in
            for key in ["", String(repeating: "k", count: 256), "with space"] {
                let answer = try await client.send(.post, "/v1/accounts", json: Self.signupBody, headers: [Self.key: key])
                #expect(answer.status == 400, "\(key): \(answer.text)")
                #expect(answer.problemType?.hasSuffix(":invalid-idempotency-key") == true)
            }
            #expect(try await store.log.lastPosition() == 0)
        }
    }
}
