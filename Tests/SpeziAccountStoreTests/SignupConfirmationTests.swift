//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

@Suite("Signup confirmation: a sealed, single-use token; a taken user id gets a notice, the caller learns nothing")
struct SignupConfirmationTests {
    /// A store whose clock the test moves, and the messages it delivered.
    private final class Harness: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let delivered = Mutex<[SignupConfirmationMessage]>([])

        func advance(seconds: Double) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
        var last: SignupConfirmationMessage? { delivered.withLock { $0.last } }
        var count: Int { delivered.withLock { $0.count } }

        /// The token of the last message, which must be a confirmation.
        func lastToken() throws -> String {
            guard case let .confirm(_, token, _) = last else {
                Issue.record("the last message is \(String(describing: last)), not a confirmation")
                throw AccountStoreError.invalidSignupToken
            }
            return token
        }
    }

    private func open(_ fixture: StoreFixture, _ harness: Harness) async throws -> AccountStore {
        try await fixture.open { options in
            options.clock = { harness.now.withLock { $0 } }
            options.signupConfirmationValidity = .seconds(600)
            options.signupConfirmationDelivery = { message in harness.delivered.withLock { $0.append(message) } }
        }
    }

    @Test("a free user id gets a token that creates the account once; nothing is logged before")
    func confirmOnce() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let harness = Harness()
        let store = try await open(fixture, harness)

        try await store.requestSignup(leland(userId: "new@example.org", password: "a good password 1"))
        #expect(try await store.log.lastPosition() == 0)
        guard case let .confirm(userId, token, expiresAt) = harness.last else {
            Issue.record("expected a confirmation, got \(String(describing: harness.last))")
            return
        }
        #expect(userId == "new@example.org" && expiresAt == Date(timeIntervalSince1970: 1_800_000_600))
        // Sealed: neither the user id nor the name can be read from the token.
        let sealed = try #require(Data(base64Encoded: base64(token)))
        #expect(sealed.range(of: Data("new@example.org".utf8)) == nil && sealed.range(of: Data("Leland".utf8)) == nil)

        let created = try await store.confirmSignup(token: token, context: AccountStore.Context(actor: "web"))
        #expect(created.userId == "new@example.org" && created.name?.givenName == "Leland" && created.isNewUser)
        let records = try await store.log.readStream(created.accountId)
        #expect(records.map(\.type) == ["account.created"] && records.first?.metadata.actor == "web")
        #expect(try await store.login(userId: "new@example.org", password: "a good password 1").accountId == created.accountId)

        // Used: the same token fails, and still fails once the account is deleted and its user id free.
        await #expect(throws: AccountStoreError.invalidSignupToken) { _ = try await store.confirmSignup(token: token) }
        try await store.delete(created.accountId)
        await #expect(throws: AccountStoreError.invalidSignupToken) { _ = try await store.confirmSignup(token: token) }
        await store.close()
    }

    @Test("a taken user id: the same answer, a notice to its owner, nothing logged")
    func takenUserId() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let harness = Harness()
        let store = try await open(fixture, harness)
        _ = try await store.signup(leland(userId: "taken@example.org", password: "the owner's password 1"))
        let head = try await store.log.lastPosition()

        try await store.requestSignup(leland(userId: "TAKEN@example.org", password: "an intruder's password 2"))
        #expect(harness.last == .alreadyRegistered(userId: "TAKEN@example.org"))
        #expect(try await store.log.lastPosition() == head)

        // Invalid details are refused the same way for a taken and a free user id, before any message.
        var noPassword = leland(userId: "taken@example.org")
        noPassword.password = nil
        var alsoNoPassword = leland(userId: "free@example.org")
        alsoNoPassword.password = nil
        for details in [noPassword, alsoNoPassword] {
            await #expect(throws: AccountOperationError.self) { try await store.requestSignup(details) }
        }
        #expect(harness.count == 1)
        await store.close()
    }

    @Test("expired, tampered, foreign and raced tokens fail with typed errors")
    func refusals() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let harness = Harness()
        let store = try await open(fixture, harness)

        try await store.requestSignup(leland(userId: "late@example.org", password: "a good password 1"))
        let late = try harness.lastToken()
        harness.advance(seconds: 601)
        await #expect(throws: AccountStoreError.invalidSignupToken) { _ = try await store.confirmSignup(token: late) }

        try await store.requestSignup(leland(userId: "race@example.org", password: "first password 11"))
        let first = try harness.lastToken()
        try await store.requestSignup(leland(userId: "race@example.org", password: "second password 22"))
        let second = try harness.lastToken()
        #expect(first != second)
        var tampered = Array(first)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
        for bad in [String(tampered), "", "not a token", String(repeating: "A", count: 100_000), first + "="] {
            await #expect(throws: AccountStoreError.invalidSignupToken) { _ = try await store.confirmSignup(token: bad) }
        }
        // Two tokens for one user id: the first confirmed wins, the other finds it taken.
        let winner = try await store.confirmSignup(token: second)
        await #expect(throws: AccountServiceError.credentialsTaken) { _ = try await store.confirmSignup(token: first) }
        #expect(try await store.login(userId: "race@example.org", password: "second password 22").accountId == winner.accountId)
        await store.close()

        // Another store (another key vault) cannot open this store's tokens.
        let otherFixture = StoreFixture()
        defer { otherFixture.cleanup() }
        let other = try await open(otherFixture, Harness())
        await #expect(throws: AccountStoreError.invalidSignupToken) { _ = try await other.confirmSignup(token: first) }
        await other.close()
    }

    @Test("an anonymous account's upgrade is confirmed the same way and keeps its account id")
    func upgrade() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let harness = Harness()
        let store = try await open(fixture, harness)
        let anonymous = try await store.signInAnonymously()

        try await store.requestUpgrade(anonymous.accountId, with: leland(userId: "upgraded@example.org", password: "a good password 1"))
        #expect(try await store.log.readStream(anonymous.accountId).count == 1)
        let token = try harness.lastToken()
        let upgraded = try await store.confirmSignup(token: token)
        #expect(upgraded.accountId == anonymous.accountId && !upgraded.isAnonymous && upgraded.userId == "upgraded@example.org")
        #expect(try await store.log.readStream(anonymous.accountId).map(\.type) == ["account.created", "account.anonymous-upgraded"])
        await #expect(throws: AccountStoreError.invalidSignupToken) { _ = try await store.confirmSignup(token: token) }
        await #expect(throws: AccountStoreError.notAnonymous(anonymous.accountId)) {
            try await store.requestUpgrade(anonymous.accountId, with: leland(userId: "again@example.org"))
        }
        await store.close()
    }

    @Test("without a delivery or a vault, signups cannot be confirmed, and say why")
    func unavailable() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        await #expect(throws: AccountStoreError.self) { try await store.requestSignup(leland()) }
        await store.close()

        let plainFixture = StoreFixture()
        defer { plainFixture.cleanup() }
        let plain = try await plainFixture.open { options in
            options.cryptoShredding = false
            options.signupConfirmationDelivery = { _ in }
        }
        do {
            try await plain.requestSignup(leland())
            Issue.record("a store without a vault accepted a signup request")
        } catch let AccountStoreError.signupConfirmationUnavailable(reason) {
            #expect(reason.contains("vault"))
        }
        await plain.close()
    }

    private func base64(_ base64url: String) -> String {
        let text = base64url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        return text + String(repeating: "=", count: (4 - text.count % 4) % 4)
    }
}
