//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

@Suite("Password reset: single-use, expiring tokens, logged only as hashes, no account enumeration")
struct PasswordResetTests {
    /// A store whose clock the test moves, and the resets it delivered.
    private final class Harness: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let delivered = Mutex<[PasswordResetRequest]>([])

        func advance(seconds: Double) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
        var last: PasswordResetRequest? { delivered.withLock { $0.last } }
        var count: Int { delivered.withLock { $0.count } }
    }

    private func open(_ fixture: StoreFixture, _ harness: Harness) async throws -> AccountStore {
        try await fixture.open { options in
            options.clock = { harness.now.withLock { $0 } }
            options.passwordResetValidity = .seconds(600)
            options.passwordResetDelivery = { request in harness.delivered.withLock { $0.append(request) } }
        }
    }

    @Test("a delivered token resets the password once; the log holds its hash, never the token")
    func resetOnce() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let harness = Harness()
        let store = try await open(fixture, harness)
        let id = try await store.signup(leland(userId: "reset@example.org", password: "the old password 1")).accountId

        try await store.requestPasswordReset(userId: "RESET@example.org", context: AccountStore.Context(actor: "web"))
        let request = try #require(harness.last)
        #expect(request.accountId == id && request.userId == "reset@example.org" && request.token.count == 43)
        #expect(request.expiresAt == harness.now.withLock { $0 }.addingTimeInterval(600))
        let logged = try #require(try await store.log.readStream(id).last)
        #expect(logged.type == "auth.password-reset-requested" && logged.metadata.actor == "web")
        #expect(
            try store.accounts.event(from: logged)
                == .passwordResetRequested(
                    tokenHash: BearerSecret.hash(request.token), expiresAtMicros: 1_800_000_600_000_000))
        #expect(logged.payload.range(of: Data(request.token.utf8)) == nil)

        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "reset@example.org", token: "not the token", newPassword: "a new password 22")
        }
        try await store.completePasswordReset(userId: "reset@example.org", token: request.token, newPassword: "a new password 22")
        _ = try await store.login(userId: "reset@example.org", password: "a new password 22")
        await #expect(throws: AccountServiceError.wrongCredentials) {
            _ = try await store.login(userId: "reset@example.org", password: "the old password 1")
        }
        // Used up: the same token does not work twice.
        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "reset@example.org", token: request.token, newPassword: "a third password 333")
        }
        await store.close()
    }

    @Test("expired, replaced and foreign tokens fail; unknown user ids get the same answers and nothing is logged")
    func refusals() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let harness = Harness()
        let store = try await open(fixture, harness)
        let id = try await store.signup(leland(userId: "a@example.org", password: "password of a 1")).accountId
        _ = try await store.signup(leland(userId: "b@example.org", password: "password of b 1"))

        // Unknown user id: no error, no delivery, nothing appended anywhere.
        let head = try await store.log.lastPosition()
        try await store.requestPasswordReset(userId: "nobody@example.org")
        #expect(harness.count == 0)
        #expect(try await store.log.lastPosition() == head)
        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "nobody@example.org", token: "x", newPassword: "whatever 12345")
        }

        // Expired.
        try await store.requestPasswordReset(userId: "a@example.org")
        let expiring = try #require(harness.last)
        harness.advance(seconds: 601)
        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "a@example.org", token: expiring.token, newPassword: "too late 123456")
        }

        // A newer request does not void the link sent before it (a stranger's requests cannot take
        // the owner's link away); a token is no good for another account.
        try await store.requestPasswordReset(userId: "a@example.org")
        let older = try #require(harness.last)
        try await store.requestPasswordReset(userId: "a@example.org")
        let newer = try #require(harness.last)
        #expect(older.token != newer.token)
        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "b@example.org", token: newer.token, newPassword: "foreign 1234567")
        }
        // The service's rules still apply to the new password, and a weak one uses nothing up.
        await #expect(throws: AccountOperationError.self) {
            try await store.completePasswordReset(userId: "a@example.org", token: newer.token, newPassword: "short")
        }
        // The older link works; using it uses up every open link.
        try await store.completePasswordReset(userId: "a@example.org", token: older.token, newPassword: "the older link 123")
        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "a@example.org", token: newer.token, newPassword: "used up 1234567")
        }
        // A password change by the owner (logged in) ends the open requests too.
        try await store.requestPasswordReset(userId: "a@example.org")
        let open = try #require(harness.last)
        var change = AccountDetails()
        change.password = "changed by the owner 1"
        _ = try await store.modify(id, try AccountModifications(modifiedDetails: change))
        await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
            try await store.completePasswordReset(userId: "a@example.org", token: open.token, newPassword: "after a change 123")
        }
        await store.close()
    }
}
