//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("The seed's AccountDetailsCache over the store's details projection")
struct DetailsCacheTests {
    @Test("loadEntry reads the projection; the memory layer sits in front; purgeDisk rebuilds the projection from the log")
    func overProjection() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let id = try await store.signup(leland(userId: "cache@example.org")).accountId
        let cache = AccountDetailsCache(source: store)
        let name = [AccountKeys.key(\.name)]

        #expect(cache.loadEntry(for: id, name)?.name?.givenName == "Leland")
        #expect(cache.loadEntry(for: "no-such-account", name) == nil)

        // A change in the log reaches the cache without being told (no memory entry yet).
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Jane", familyName: "Stanford")
        _ = try await store.modify(id, try AccountModifications(modifiedDetails: change))
        #expect(cache.loadEntry(for: id, name)?.name?.givenName == "Jane")

        // What a storage provider communicates sits in front until the memory layer is purged.
        var local = AccountDetails()
        local.name = PersonNameComponents(givenName: "Local")
        cache.communicateRemoteChanges(for: id, local)
        #expect(cache.loadEntry(for: id, name)?.name?.givenName == "Local")
        cache.purgeMemoryCache()
        #expect(cache.loadEntry(for: id, name)?.name?.givenName == "Jane")

        // "Rebuild the AccountDetails cache": the projection is replayed into a new generation.
        let before = try #require(try await store.projections.status().first { $0.name == AccountDetailsProjection.projectionName })
        try await cache.purgeDisk()
        let after = try #require(try await store.projections.status().first { $0.name == AccountDetailsProjection.projectionName })
        #expect(after.generation > before.generation)
        #expect(cache.loadEntry(for: id, name)?.name?.givenName == "Jane")
        await store.close()
    }

    @Test("a disk-backed cache: purgeDisk deletes the copies, and the memory layer with them")
    func onDisk() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("details-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = AccountDetailsCache(directory: folder)
        var details = AccountDetails()
        details.name = PersonNameComponents(givenName: "Disk")
        cache.communicateRemoteChanges(for: "a1", details)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 1)
        cache.purgeMemoryCache()
        #expect(cache.loadEntry(for: "a1", [AccountKeys.key(\.name)])?.name?.givenName == "Disk")
        try await cache.purgeDisk()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        #expect(cache.loadEntry(for: "a1", [AccountKeys.key(\.name)]) == nil)
    }
}
