//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Provider identities linked as events")
struct IdentityLinkTests {
    static let apple = LinkedIdentity(issuer: "https://appleid.apple.com", subject: "001234.aaaa.0001")

    @Test("a first sign-in creates an account linked to the identity; the second finds it")
    func createThenFind() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let first = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(600))
        #expect(first.created)
        #expect(first.details.isNewUser)
        let second = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(600))
        #expect(!second.created)
        #expect(second.details.accountId == first.details.accountId)
        #expect(try await store.authenticate(token: second.session.token).identities == [Self.apple])
        let types = try await store.log.readStream(first.details.accountId, from: 1, limit: 100).map(\.type)
        #expect(
            types == [
                "account.created", "account.identity-linked", "auth.login-succeeded", "auth.session-started", "auth.login-succeeded",
                "auth.session-started"
            ])
        #expect(try await store.accounts.accountId(forIssuer: Self.apple.issuer, subject: Self.apple.subject) == first.details.accountId)
        await store.close()
    }

    @Test("a new account takes the verified e-mail address as its user id, unless another account has it")
    func emailAsUserId() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let created = try await store.startSession(identity: Self.apple, newUserId: "ada@example.org", validity: .seconds(600))
        #expect(created.details.userId == "ada@example.org")
        #expect(try await store.accounts.accountId(forUserId: "ADA@example.org") == created.details.accountId)

        try await store.signup(leland(userId: "leland@stanford.edu"))
        let other = LinkedIdentity(issuer: Self.apple.issuer, subject: "001234.bbbb.0002")
        await #expect(throws: AccountServiceError.credentialsTaken) {
            try await store.startSession(identity: other, newUserId: "leland@stanford.edu", validity: .seconds(600))
        }
        // Nothing was claimed by the refused sign-in.
        #expect(try await store.accounts.accountId(forIssuer: other.issuer, subject: other.subject) == nil)
        await store.close()
    }

    @Test("an identity linked to one account cannot be linked to a second")
    func oneAccountPerIdentity() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let first = try await store.signup(leland(userId: "first@example.org")).accountId
        let second = try await store.signup(leland(userId: "second@example.org")).accountId
        let linked = try await store.link(Self.apple, to: first)
        #expect(linked.identities == [Self.apple])
        await #expect(throws: AccountStoreError.identityTaken) { try await store.link(Self.apple, to: second) }
        #expect(!(try await store.log.readStream(second, from: 1, limit: 100).map(\.type).contains("account.identity-linked")))
        // Linking again is no change; another identity of the same provider is refused.
        try await store.link(Self.apple, to: first)
        await #expect(throws: AccountStoreError.identityOfIssuerLinked(issuer: Self.apple.issuer)) {
            try await store.link(LinkedIdentity(issuer: Self.apple.issuer, subject: "other"), to: first)
        }
        #expect(try await store.log.readStream(first, from: 1, limit: 100).map(\.type).filter { $0 == "account.identity-linked" }.count == 1)
        await store.close()
    }

    @Test("the last way in cannot be unlinked; with a password it can, and the claim is released")
    func lastWayIn() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let onlyApple = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(600)).details.accountId
        await #expect(throws: AccountStoreError.lastWayIn) { try await store.unlinkIdentity(issuer: Self.apple.issuer, from: onlyApple) }
        await #expect(throws: AccountStoreError.identityNotLinked(issuer: "https://accounts.google.com")) {
            try await store.unlinkIdentity(issuer: "https://accounts.google.com", from: onlyApple)
        }
        #expect(!(try await store.log.readStream(onlyApple, from: 1, limit: 100).map(\.type).contains("account.identity-unlinked")))

        let withPassword = try await store.signup(leland(userId: "pw@example.org")).accountId
        let google = LinkedIdentity(issuer: "https://accounts.google.com", subject: "1077")
        try await store.link(google, to: withPassword)
        let after = try await store.unlinkIdentity(issuer: google.issuer, from: withPassword)
        #expect(after.identities.isEmpty)
        #expect(try await store.accounts.accountId(forIssuer: google.issuer, subject: google.subject) == nil)
        #expect(
            try await store.log.readStream(withPassword, from: 1, limit: 100).map(\.type).suffix(2) == [
                "account.identity-linked", "account.identity-unlinked"
            ])
        // Released: another account may link it now.
        try await store.link(google, to: onlyApple)
        await store.close()
    }

    @Test("deleting an account releases its identities; the state's stored form keeps them")
    func deletionReleases() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let accountId = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(600)).details.accountId
        let state = try #require(try await store.accounts.load(accountId))
        #expect(try AccountState(encoded: state.encoded()) == state)
        try await store.delete(accountId)
        #expect(try await store.accounts.accountId(forIssuer: Self.apple.issuer, subject: Self.apple.subject) == nil)
        let again = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(600))
        #expect(again.created)
        #expect(again.details.accountId != accountId)
        await store.close()
    }
}
