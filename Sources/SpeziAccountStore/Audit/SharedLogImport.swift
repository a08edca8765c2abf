//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

internal import BlockingPool
import EventLog
import Foundation
import KeyVaultStorage
internal import PostgresEventLog

extension StoreBuilder {
    /// Builds the log of a store on PostgreSQL at `url` (whose log must be empty or not exist yet)
    /// and the store's folder at `directory` (which must be free): the records go into a schema of
    /// their own, with the key vault (`vaultFile`'s header and slots, or a new vault), and that
    /// schema is renamed into place in one transaction once every chain hash checked out. A failure
    /// drops the staging schema and leaves the target as it was.
    static func buildShared(
        url: String, directory: String, vault vaultFile: URL?, progress: ((UInt64) -> Void)?, next: Source
    ) async throws -> UInt64 {
        let target = try PostgresLogLocation(url: url)
        let folder = URL(fileURLWithPath: directory).standardizedFileURL
        try StoreFolders.checkFree(folder)
        if let held = try await PostgresEventLog.recordCount(at: target), held > 0 {
            throw LogTransferError.logNotEmpty(target.description, records: UInt64(held))
        }
        var named = target
        let tag = String(format: "%08x", UInt32.random(in: 0...UInt32.max))
        named.schema = String("import_\(tag)_\(target.schema)".prefix(40))
        let staging = named
        var options = PostgresLogOptions()
        // The staging log's commits need not wait for the WAL: the rename's commit flushes them.
        options.durability = .relaxed
        do {
            let log = try await PostgresEventLog.open(staging, options: options)
            let count: UInt64
            do {
                let vault = try await BlockingPool.vault.run { try sharedVault(at: staging, copying: vaultFile) }
                defer { vault.release() }
                count = try await fill(log, vault: vault, progress: progress, next: next)
                await log.close()
            } catch {
                await log.close()
                throw error
            }
            try await PostgresEventLog.promote(staging, to: target)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return count
        } catch {
            try? await PostgresEventLog.dropSchema(staging)
            throw error
        }
    }

    /// The key vault of a log being imported into PostgreSQL: a copy of `vaultFile` (its header
    /// and every slot) or, without one, a new vault.
    private static func sharedVault(at location: PostgresLogLocation, copying vaultFile: URL?) throws -> KeyVault {
        guard let vaultFile else { return try KeyVault(storage: PostgresVaultStorage(location: location, create: VaultFile.newHeader())) }
        let source = try FileVaultStorage(path: vaultFile.path, create: false)
        defer { source.release() }
        let (header, slots) = try source.withLock(exclusive: false) { (try source.readHeader(), try source.readSlots(from: 0)) }
        _ = try VaultFile.parseHeader(header, path: vaultFile.path)
        let storage = try PostgresVaultStorage(location: location, create: header)
        if !slots.isEmpty { try storage.withLock(exclusive: true) { try storage.writeSlots(slots, at: 0) } }
        return try KeyVault(storage: storage)
    }
}
