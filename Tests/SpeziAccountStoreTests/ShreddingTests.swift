//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccount
import TestTiers
import Testing

@testable import SpeziAccountStore

/// Every file of the store (log, projections, key vault), concatenated.
func storeBytes(_ directory: URL) throws -> Data {
    var all = Data()
    let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
    while let file = files?.nextObject() as? URL {
        if let data = try? Data(contentsOf: file) { all += data }
    }
    return all
}

@Suite("Crypto-shredding: a deleted account's personal data is unreadable, the log still verifies")
struct ShreddingTests {
    @Test("100 accounts, 50 deleted: none of their values in any file, replay yields deleted without details, the chain verifies", .integration)
    func shredAndScan() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        var ids: [String] = []
        for index in 0..<100 {
            var details = leland(userId: "shred-\(index)@example.org")
            details.name = PersonNameComponents(givenName: "Erasable\(index)Given", familyName: "Erasable\(index)Family")
            let id = try await store.signup(details).accountId
            var change = AccountDetails()
            change.name = PersonNameComponents(givenName: "Renamed\(index)Given", familyName: "Erasable\(index)Family")
            try await store.modify(id, try AccountModifications(modifiedDetails: change))
            ids.append(id)
        }
        for id in ids.prefix(50) { try await store.delete(id) }
        let before = try cachedStates(store)
        await store.close()

        // Nothing personal is in the clear in any file: neither of the deleted accounts nor of the
        // live ones (their data is sealed too, readable only through their keys).
        let bytes = try storeBytes(fixture.directory)
        #expect(bytes.count > 100_000)
        for index in 0..<100 {
            for marker in ["Erasable\(index)Given", "Renamed\(index)Given", "shred-\(index)@example.org"] {
                #expect(bytes.range(of: Data(marker.utf8)) == nil, "\(marker) found in the store's files")
            }
        }

        store = try await fixture.open()
        await #expect(try store.log.verify().isIntact)
        for (index, id) in ids.enumerated() {
            let events = try await store.log.readStream(id).map { try store.accounts.event(from: $0) }
            if index < 50 {
                #expect(events.prefix(2) == [.redacted(type: "account.created"), .redacted(type: "account.details-modified")])
                #expect(try store.details(of: id) == nil)
                await #expect(try store.resolve("shred-\(index)@example.org") == nil)
            } else {
                #expect(try store.details(of: id)?.name?.givenName == "Renamed\(index)Given")
                await #expect(try store.resolve("SHRED-\(index)@example.org") == id)
            }
        }
        try await store.projections.rebuild(AccountDetailsProjection.projectionName)
        let rebuilt = try cachedStates(store)
        #expect(rebuilt == before)
        for id in ids.prefix(50) {
            let state = try #require(rebuilt[id])
            #expect(state.isDeleted && state.userId.isEmpty && state.values.isEmpty && state.passwordHash == nil)
        }
        #expect(store.accounts.vault?.count == 100)
        #expect(ids.prefix(50).allSatisfy { (try? store.accounts.vault?.isShredded($0)) == true })
        await store.close()
    }

    @Test("a deletion cut short between marking and destroying the key is finished at the next open; an unmarked one is undone")
    func crashWindow() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        let deleted = try await store.signup(leland(userId: "gone@example.org")).accountId
        let kept = try await store.signup(leland(userId: "kept@example.org")).accountId
        // As if the process died after appending the deletion but before destroying the key...
        let vault = try #require(store.accounts.vault)
        try vault.markShredding(deleted)
        try await store.accounts.append(
            [.accountDeleted], to: deleted, expectedVersion: .any, releases: [store.accounts.claim(forUserId: "gone@example.org")])
        // ...and one that died after marking, before appending.
        try vault.markShredding(kept)
        await store.close()

        store = try await fixture.open()
        #expect(try store.accounts.vault?.isShredded(deleted) == true)
        #expect(try store.accounts.vault?.isShredded(kept) == false)
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: try store.log.lastPosition())
        #expect(try store.details(of: deleted) == nil)
        #expect(try store.details(of: kept)?.userId == "kept@example.org")
        await #expect(try store.accounts.event(from: try store.log.readStream(deleted)[0]) == .redacted(type: "account.created"))
        await store.close()
    }

    @Test("a damaged vault slot or header is a clear error at open, never a crash or silent data loss")
    func damagedVault() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        try await store.signup(leland())
        await store.close()
        let path = fixture.directory.appendingPathComponent("keys/vault")
        var bytes = try Data(contentsOf: path)
        bytes[KeyVault.headerSize + 20] ^= 0xFF
        try bytes.write(to: path)
        await #expect(throws: KeyVaultError.damagedSlot(path: path.path, slot: 0)) { try await fixture.open() }
        bytes[0] = UInt8(ascii: "X")
        try bytes.write(to: path)
        await #expect(throws: KeyVaultError.self) { try await fixture.open() }
    }
}
