//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import EventLog
import Foundation
import SpeziAccount
import TestSupport
import TestTiers
import Testing

@testable import SpeziAccountStore

/// Writes `store`'s export and a copy of its vault into `folder`; returns both.
private func exportWithVault(_ store: AccountStore, into folder: URL) async throws -> (export: URL, vault: URL) {
    let export = folder.appendingPathComponent("export-\(UUID().uuidString).jsonl")
    try await writeExport(of: store.log, to: export)
    let vault = folder.appendingPathComponent("vault-\(UUID().uuidString)")
    try #require(store.accounts.vault).copy(to: vault.path)
    return (export, vault)
}

@Suite("Moving a store between LMDB and PostgreSQL keeps every chain hash and every key", .serialized, .integration)
struct BackendMoveTests {
    init() { PostgresLogSupport.register() }

    @Test("LMDB → PostgreSQL → LMDB: the same head hash at each step, sealed accounts readable, deleted ones not, user ids still unique")
    func roundTrip() async throws {
        let server = try await PostgresServer.start(name: "move")
        defer { server.remove() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("move-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // An LMDB store with live, modified and deleted accounts.
        let original = StoreFixture()
        defer { original.cleanup() }
        let store = try await original.open()
        var ids: [String] = []
        for index in 0..<8 {
            var details = leland(userId: "move-\(index)@example.org")
            details.name = PersonNameComponents(givenName: "Mover\(index)", familyName: "Family")
            ids.append(try await store.signup(details).accountId)
        }
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Renamed", familyName: "Family")
        try await store.modify(ids[1], try AccountModifications(modifiedDetails: change))
        try await store.delete(ids[2])
        let head = try await store.log.verify().headHash
        let count = try await store.log.lastPosition()
        let fromLMDB = try await exportWithVault(store, into: folder)
        await store.close()

        // Into PostgreSQL: a node folder and the shared log.
        let url = server.url()
        let node = folder.appendingPathComponent("node")
        let imported = try await LogTransfer.importLog(from: fromLMDB.export, into: node.path, logLocation: url, vault: fromLMDB.vault)
        #expect(imported == count)
        #expect(
            try await server.psql("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'import_%'").trimmingCharacters(in: .whitespacesAndNewlines)
                == "0")
        let shared = try await AccountStore(directory: node.path, options: nodeOptions(url))
        try await shared.waitUntilCaughtUp()
        #expect(try await shared.log.verify(progress: nil).headHash == head)
        #expect(try shared.details(of: ids[0])?.name?.givenName == "Mover0")
        #expect(try shared.details(of: ids[1])?.name?.givenName == "Renamed")
        #expect(try shared.details(of: ids[2]) == nil)
        #expect(try await shared.resolve("MOVE-3@example.org") == ids[3])
        // The claims were re-made with the same vault: a taken user id stays taken, a deleted one is free.
        await #expect(throws: AccountServiceError.credentialsTaken) { _ = try await shared.signup(leland(userId: "move-4@example.org")) }
        let reused = try await shared.signup(leland(userId: "move-2@example.org")).accountId
        let sharedHead = try await shared.log.verify(progress: nil).headHash
        let fromPostgres = try await exportWithVault(shared, into: folder)
        await shared.close()

        // An import into a log that has records is refused and changes nothing.
        await #expect {
            _ = try await LogTransfer.importLog(
                from: fromLMDB.export, into: folder.appendingPathComponent("second-node").path, logLocation: url, vault: fromLMDB.vault)
        } throws: { error in
            guard case let .logNotEmpty(location, records) = error as? LogTransferError else { return false }
            return records == count + 1 && location.hasPrefix("postgres://postgres@127.0.0.1:") && !location.contains("password")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("second-node").path))

        // And back to LMDB, with the vault that lived in PostgreSQL.
        let back = StoreFixture()
        defer { back.cleanup() }
        #expect(try await LogTransfer.importLog(from: fromPostgres.export, into: back.directory.path, vault: fromPostgres.vault) == count + 1)
        let local = try await back.open()
        try await local.waitUntilCaughtUp()
        #expect(try await local.log.verify().headHash == sharedHead)
        #expect(try local.details(of: ids[1])?.name?.givenName == "Renamed")
        #expect(try local.details(of: ids[2]) == nil)
        #expect(try await local.resolve("move-2@example.org") == reused)
        await local.close()
    }

    @Test("a tampered export fails the import into PostgreSQL: the target log stays empty and no staging schema is left")
    func failedImportLeavesNothing() async throws {
        let server = try await PostgresServer.start(name: "move-fail")
        defer { server.remove() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("move-fail-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = StoreFixture()
        defer { original.cleanup() }
        let store = try await original.open()
        for index in 0..<4 { try await store.signup(leland(userId: "fail-\(index)@example.org")) }
        let exported = try await exportWithVault(store, into: folder)
        await store.close()
        var lines = try String(contentsOf: exported.export, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[2] = lines[2].replacingOccurrences(of: "\"timestampMicros\":", with: "\"timestampMicros\":1")
        let tampered = folder.appendingPathComponent("tampered.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: tampered)

        let node = folder.appendingPathComponent("node")
        await #expect(throws: LogTransferError.hashMismatch(position: 3)) {
            _ = try await LogTransfer.importLog(from: tampered, into: node.path, logLocation: server.url(), vault: exported.vault)
        }
        #expect(!FileManager.default.fileExists(atPath: node.path))
        let schemas = try await server.psql(
            "SELECT string_agg(nspname, ',') FROM pg_namespace WHERE nspname LIKE 'import_%' OR nspname = 'spezi_account_log'")
        #expect(schemas.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        // The intact export then goes in.
        #expect(try await LogTransfer.importLog(from: exported.export, into: node.path, logLocation: server.url(), vault: exported.vault) == 4)
    }
}
