//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Provider tokens owed a revocation")
struct ProviderTokenTests {
    static let apple = LinkedIdentity(issuer: "https://appleid.apple.com", subject: "001234.tok.0001")

    @Test("a deletion owes the kept token a revocation, across a reopen and a rebuild, until it is recorded as revoked")
    func owedUntilRevoked() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        let first = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(60), providerToken: "r.first")
        let accountId = first.details.accountId
        // A later sign-in's token replaces the kept one.
        _ = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(60), providerToken: "r.second")
        #expect(try await store.pendingProviderTokenRevocations().isEmpty)
        try await store.delete(accountId)
        let owed = ProviderTokenRevocation(accountId: accountId, issuer: Self.apple.issuer, token: "r.second")
        #expect(try await store.pendingProviderTokenRevocations() == [owed])
        await store.close()
        // Sealed under the vault, not the account's destroyed key: still owed, and readable, after a reopen and a rebuild.
        let bytes = try Data(contentsOf: fixture.directory.appendingPathComponent("log/data.mdb"))
        #expect(bytes.range(of: Data("r.second".utf8)) == nil)
        store = try await fixture.open()
        #expect(try await store.pendingProviderTokenRevocations() == [owed])
        try await store.rebuildProjection(ProviderTokenProjection.projectionName)
        #expect(try await store.pendingProviderTokenRevocations() == [owed])
        try await store.recordProviderTokenRevoked(owed)
        #expect(try await store.pendingProviderTokenRevocations().isEmpty)
        try await store.rebuildProjection(ProviderTokenProjection.projectionName)
        #expect(try await store.pendingProviderTokenRevocations().isEmpty)
        let types = try await store.log.readStream(accountId, from: 1, limit: 100).map(\.type)
        #expect(types.last == "auth.provider-token-revoked")
        await store.close()
    }

    @Test("unlinking owes the identity's token a revocation; other accounts' tokens are not touched")
    func unlinkOwes() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let account = try await store.signup(leland()).accountId
        try await store.link(Self.apple, to: account, providerToken: "r.linked")
        let other = try await store.startSession(
            identity: LinkedIdentity(issuer: Self.apple.issuer, subject: "other"), newUserId: nil, validity: .seconds(60),
            providerToken: "r.other")
        try await store.unlinkIdentity(issuer: Self.apple.issuer, from: account)
        #expect(
            try await store.pendingProviderTokenRevocations() == [
                ProviderTokenRevocation(accountId: account, issuer: Self.apple.issuer, token: "r.linked")
            ])
        #expect(!(try await store.pendingProviderTokenRevocations()).contains { $0.accountId == other.details.accountId })
        await #expect(throws: AccountStoreError.identityNotLinked(issuer: "https://accounts.google.com")) {
            try await store.storeProviderToken("r.x", issuer: "https://accounts.google.com", for: account)
        }
        await store.close()
    }
}
