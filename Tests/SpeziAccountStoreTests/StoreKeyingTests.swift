//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import LMDB
import SpeziAccount
import Testing

@testable import SpeziAccountStore

/// Removes the recorded keying from a store's log, as in a store written before it was recorded.
func forgetKeying(_ fixture: StoreFixture) throws {
    let environment = try Environment(path: fixture.directory.appendingPathComponent("log").path)
    defer { environment.close() }
    let meta = try environment.openDatabase("meta", create: false)
    try environment.write { txn in _ = try txn.delete(meta, key: Array("app:account-store/keying".utf8)) }
}

func keyMismatch(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch let AccountStoreError.keyMismatch(message) {
        return message
    } catch {
        return "unexpected error \(error)"
    }
}

@Suite("A store knows its keys: missing, foreign and unexpected vaults are refused; shredding is turned on by a migration")
struct StoreKeyingTests {
    @Test("a store records its keying at creation; a store without a vault keeps working without one, and user ids stay unique")
    func plainStoreStaysPlain() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open { $0.cryptoShredding = false }
        try await store.signup(leland(userId: "user5@example.org"))
        await #expect(try store.log.metadata("account-store/keying") == Array("plain".utf8))
        await store.close()
        // Opened as a tool would, asking for shredding: the store stays plain, no vault appears.
        store = try await fixture.open()
        #expect(store.accounts.vault == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.appendingPathComponent("keys/vault").path))
        await #expect(try store.resolve("user5@example.org") != nil)
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: "USER5@example.org")) }
        await store.close()
    }

    @Test("a keyed store whose vault is missing is refused with a message naming the files, and no new vault is made")
    func missingVault() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        try await store.signup(leland())
        let id = try #require(store.accounts.vault?.id)
        await store.close()
        let vault = fixture.directory.appendingPathComponent("keys/vault")
        try FileManager.default.removeItem(at: vault)
        let message = try #require(await keyMismatch { _ = try await fixture.open() })
        #expect(message.contains(id) && message.contains(vault.path) && message.contains("restore keys/vault from a backup"))
        #expect(!FileManager.default.fileExists(atPath: vault.path))
        // The same for a store written before the keying was recorded: its claims are HMACs.
        try forgetKeying(fixture)
        #expect(await keyMismatch { _ = try await fixture.open() }?.contains("is missing") == true)
        #expect(!FileManager.default.fileExists(atPath: vault.path))
    }

    @Test("another store's vault is refused, for a recorded store and for an older one")
    func foreignVault() async throws {
        let first = StoreFixture()
        let second = StoreFixture()
        defer {
            first.cleanup()
            second.cleanup()
        }
        for fixture in [first, second] {
            let store = try await fixture.open()
            try await store.signup(leland())
            await store.close()
        }
        let vault = first.directory.appendingPathComponent("keys/vault")
        try FileManager.default.removeItem(at: vault)
        try FileManager.default.copyItem(at: second.directory.appendingPathComponent("keys/vault"), to: vault)
        #expect(await keyMismatch { _ = try await first.open() }?.contains("put the store's own keys/vault back") == true)
        try forgetKeying(first)
        #expect(await keyMismatch { _ = try await first.open() }?.contains("does not open the accounts") == true)
    }

    @Test("a vault beside a log written without one is refused; an older plain log is recognised as plain")
    func unexpectedVault() async throws {
        let fixture = StoreFixture()
        let other = StoreFixture()
        defer {
            fixture.cleanup()
            other.cleanup()
        }
        var store = try await fixture.open { $0.cryptoShredding = false }
        try await store.signup(leland(userId: "user5@example.org"))
        await store.close()
        let otherStore = try await other.open()
        await otherStore.close()
        let vault = fixture.directory.appendingPathComponent("keys/vault")
        try FileManager.default.createDirectory(at: vault.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: other.directory.appendingPathComponent("keys/vault"), to: vault)
        #expect(await keyMismatch { _ = try await fixture.open() }?.contains("enable-shredding") == true)
        try FileManager.default.removeItem(at: vault)
        // Written before the keying was recorded: plain claims tell it was plain, and it stays so.
        try forgetKeying(fixture)
        store = try await fixture.open()
        #expect(store.accounts.vault == nil)
        await #expect(try store.log.metadata("account-store/keying") == Array("plain".utf8))
        await #expect(try store.resolve("user5@example.org") != nil)
        await store.close()
    }

    @Test("an older keyed store with its own vault is adopted and recorded")
    func olderKeyedStore() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        let id = try await store.signup(leland()).accountId
        let vaultID = try #require(store.accounts.vault?.id)
        await store.close()
        try forgetKeying(fixture)
        store = try await fixture.open()
        #expect(store.accounts.vault?.id == vaultID)
        await #expect(
            StoreKeying(encoded: try #require(try store.log.metadata("account-store/keying"))) == StoreKeying(try #require(store.accounts.vault)))
        await #expect(try store.resolve("lelandstanford@stanford.edu") == id)
        await store.close()
    }

    @Test("enable-shredding: a plain store gets a vault; chain, accounts and unique user ids carry over; new data is shredded on deletion")
    func migration() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open { $0.cryptoShredding = false }
        let kept = try await store.signup(leland(userId: "kept@example.org")).accountId
        let gone = try await store.signup(leland(userId: "gone@example.org")).accountId
        let head = try await store.log.verify().headHash
        let count = try await store.log.lastPosition()
        // Refused while the store is open.
        await #expect(throws: AccountStoreError.self) { _ = try await AccountStore.enableCryptoShredding(directory: fixture.directory.path) }
        await store.close()
        let old = try await AccountStore.enableCryptoShredding(directory: fixture.directory.path)
        defer { try? FileManager.default.removeItem(atPath: old) }
        #expect(FileManager.default.fileExists(atPath: old + "/log/data.mdb"))

        store = try await fixture.open()
        let vault = try #require(store.accounts.vault)
        await #expect(StoreKeying(encoded: try #require(try store.log.metadata("account-store/keying"))) == StoreKeying(vault))
        let report = try await store.log.verify()
        #expect(report.isIntact && report.headHash == head && report.lastPosition == count)
        await #expect(try store.resolve("KEPT@example.org") == kept)
        #expect(store.accounts.claim(forUserId: "kept@example.org") != AccountLog.userIdClaim("kept@example.org"))
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: "gone@example.org")) }
        // New personal data is sealed, and destroyed with the account.
        var change = AccountDetails()
        change.genderIdentity = .female
        try await store.modify(gone, try AccountModifications(modifiedDetails: change))
        try await store.delete(gone)
        #expect(try vault.isShredded(gone))
        let last = try await #require(try store.log.readStream(gone).dropLast().last)
        #expect(try store.accounts.event(from: last) == .redacted(type: "account.details-modified"))
        await store.close()
        // A second migration is refused.
        await #expect(throws: AccountStoreError.self) { _ = try await AccountStore.enableCryptoShredding(directory: fixture.directory.path) }
    }
}
