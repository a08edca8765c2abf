//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

/// Keyed commands (`Context.idempotencyKey`): a retry appends nothing and answers as the first did.
@Suite("Idempotency keys in the store")
struct IdempotencyTests {
    @Test("a keyed signup retried, with and without a vault, and concurrently: one account, one event", arguments: [true, false])
    func keyedSignup(shredding: Bool) async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.cryptoShredding = shredding }
        let keyed = AccountStore.Context(idempotencyKey: "request-1")
        let first = try await store.signup(leland(), context: keyed)
        let again = try await store.signup(leland(), context: keyed)
        #expect(again.accountId == first.accountId)
        #expect(try await store.log.lastPosition() == 1)
        #expect(try await store.hasCommitted(.signup, accountId: first.accountId, context: keyed))
        #expect(
            try await store.hasCommitted(.signup, accountId: first.accountId, context: AccountStore.Context(idempotencyKey: "request-2")) == false)
        #expect(try await store.hasCommitted(.signup, accountId: first.accountId, context: AccountStore.Context()) == false)
        // Another key is another signup: the user id is taken.
        await #expect(throws: AccountServiceError.credentialsTaken) {
            try await store.signup(leland(), context: AccountStore.Context(idempotencyKey: "request-2"))
        }

        // Twelve retries of one keyed signup released together: all answer the one account.
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try await store.signup(leland(userId: "crowd@example.org"), context: AccountStore.Context(idempotencyKey: "crowd")).accountId
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        #expect(try await store.log.lastPosition() == 2)
        await store.close()
    }

    @Test("the derived ids stay the same across a reopen of the store, and differ per key")
    func derivedAcrossReopen() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open { $0.cryptoShredding = false }
        let keyed = AccountStore.Context(idempotencyKey: "request-1")
        let first = try await store.signup(leland(), context: keyed)
        let session = try await store.startSession(for: first.accountId, validity: .seconds(60), context: keyed)
        await store.close()
        store = try await fixture.open { $0.cryptoShredding = false }
        #expect(try await store.signup(leland(), context: keyed).accountId == first.accountId)
        let again = try await store.startSession(for: first.accountId, validity: .seconds(600), context: keyed)
        #expect(again == session, "the same token and the first attempt's expiry")
        #expect(try await store.log.lastPosition() == 2)
        let other = try await store.startSession(
            for: first.accountId, validity: .seconds(60), context: AccountStore.Context(idempotencyKey: "request-2"))
        #expect(other.token != session.token)
        let records = try await store.log.readStream(first.accountId, from: 1, limit: 10)
        // Derived ids sort before the time-ordered ones (their first four bytes are zero).
        #expect(records.allSatisfy { $0.eventID.uuid.0 == 0 && $0.eventID.uuid.1 == 0 && $0.eventID.uuid.6 >> 4 == 8 })
        await store.close()
    }

    @Test("keyed modify and delete retried: one change, one deletion, the retry of the deletion returns")
    func keyedModifyAndDelete() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let accountId = try await store.signup(leland()).accountId
        var change = AccountDetails()
        var name = PersonNameComponents()
        name.givenName = "Jane"
        change.name = name
        let modifications = try AccountModifications(modifiedDetails: change)
        let keyed = AccountStore.Context(idempotencyKey: "change-1")
        let first = try await store.modify(accountId, modifications, context: keyed)
        let again = try await store.modify(accountId, modifications, context: keyed)
        #expect(first.name?.givenName == "Jane" && again.name?.givenName == "Jane")
        #expect(try await store.log.lastPosition() == 2)

        let deletion = AccountStore.Context(idempotencyKey: "delete-1")
        try await store.delete(accountId, context: deletion)
        let head = try await store.log.lastPosition()
        try await store.delete(accountId, context: deletion)
        #expect(try await store.log.lastPosition() == head)
        // Without the key, deleting a deleted account is still refused.
        await #expect(throws: AccountStoreError.self) { try await store.delete(accountId) }
        await store.close()
    }
}
