//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
internal import BlockingPool
import EventLog
import EventLogProtocol
import Foundation

/// What a backup or restore copied.
public struct StoreCopyReport: Sendable, Equatable {
    /// The folder of the copy.
    public let directory: String
    /// The last position of the copied log.
    public let lastPosition: UInt64
    /// The chain hash of the copied log's last record (hex; empty for an empty log): the original
    /// log had the same record with the same hash at that position.
    public let headHash: String
    /// The copied key vault's id (nil for a store without one).
    public let vaultID: String?
}

extension AccountStore {
    /// Makes a consistent copy of the open store in `destination` (which must not exist, or be an
    /// empty folder) while writers, in this process or others, keep running.
    ///
    /// The order matters: the projections first, so that no checkpoint in the copy is beyond the
    /// copied log's end (they catch up when the copy is opened); then the log (LMDB's compacting
    /// copy, as of one read transaction); then the key vault, under its lock. A key is flushed to the
    /// vault before the first event sealed with it is appended, so the later vault copy holds every
    /// key the copied log needs. An account deleted while the backup runs may be in the copied log
    /// as live while its key is already destroyed in the copied vault: it reads as redacted, as the
    /// erasure demands. The copy is built beside `destination`, its chain is checked against the
    /// original, and it is moved into place only then.
    ///
    /// - Parameter destination: The folder of the copy: it must not exist, or be empty.
    /// - Returns: What was copied: the folder, the copied log's last position and head hash, and the
    ///   vault's id.
    /// - Throws: ``AccountStoreError/storeTransfer(_:)`` for a store whose log is not in its folder (a
    ///   PostgreSQL log), or when the copy does not verify or differs from the original;
    ///   ``LogTransferError/notEmpty(_:)`` when `destination` holds something; or a file, log or
    ///   key-vault error while copying. Nothing is left at `destination` then.
    public func backup(to destination: String) async throws -> StoreCopyReport {
        // The copies read the whole store: on a thread of their own, not the cooperative pool.
        let pool = BlockingPool(threads: 1, name: "backup")
        defer { pool.shutdown() }
        guard let log = log as? EventLog else {
            throw AccountStoreError.storeTransfer(
                "backup copies a store whose log is in its folder; the log at \(log.location) is backed up with its server's tools")
        }
        return try await pool.run { [self] in try backupBlocking(to: destination, log: log) }
    }

    private func backupBlocking(to destination: String, log: EventLog) throws -> StoreCopyReport {
        let target = URL(fileURLWithPath: destination).standardizedFileURL
        try StoreFolders.checkFree(target)
        let staging = try StoreFolders.makeStaging(beside: target, purpose: "backup")
        do {
            try projections.copy(to: staging.appendingPathComponent("projections").path)
            try log.copy(to: staging.appendingPathComponent("log").path)
            if let vault = accounts.vault {
                try FileManager.default.createDirectory(at: staging.appendingPathComponent("keys"), withIntermediateDirectories: true)
                try vault.copy(to: staging.appendingPathComponent("keys/vault").path)
            }
            let report = try Self.checkCopy(at: staging, against: log, vault: accounts.vault)
            try StoreFolders.moveIntoPlace(staging, target)
            return StoreCopyReport(directory: target.path, lastPosition: report.lastPosition, headHash: report.headHash, vaultID: report.vaultID)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    /// Verifies the copied log in `root` (checksums, chain, positions, indexes) and, when the
    /// original is given, that the original has the same record at the copy's last position.
    static func checkCopy(at root: URL, against original: EventLog?, vault: KeyVault?) throws -> StoreCopyReport {
        var options = EventLogOptions()
        options.readOnly = true
        let copy = try EventLog(path: root.appendingPathComponent("log").path, options: options)
        defer { copy.close() }
        let report = try copy.verifyBlocking()
        guard report.isIntact else {
            throw AccountStoreError.storeTransfer("the copied log in \(root.path) does not verify: \(report.problem?.description ?? "damaged")")
        }
        let last = try copy.lastPosition()
        let head = try copy.record(at: last)?.hash.description ?? ""
        if let original, last > 0, try original.record(at: last)?.hash.description != head {
            throw AccountStoreError.storeTransfer("the copy's record at position \(last) differs from the original's")
        }
        return StoreCopyReport(directory: root.path, lastPosition: last, headHash: head, vaultID: vault?.id)
    }

    /// Restores a backup made by ``backup(to:)`` into `directory` (which must not exist, or be an
    /// empty folder): the backup is copied beside it, checked (the log verifies; the vault is the
    /// one the log was written with), and moved into place. The backup itself is not changed. A
    /// backup is also a store: opening it directly works too.
    ///
    /// - Parameters:
    ///   - backup: The folder ``backup(to:)`` made.
    ///   - directory: The store's new folder: it must not exist, or be empty.
    /// - Returns: What was restored: the folder, the log's last position and head hash, and the
    ///   vault's id.
    /// - Throws: ``AccountStoreError/storeTransfer(_:)`` when `backup` holds no backup or its log does
    ///   not verify; ``AccountStoreError/keyMismatch(_:)`` when the vault is missing or not the one the
    ///   log was written with; ``LogTransferError/notEmpty(_:)`` when `directory` holds something; or a
    ///   file or log error. Nothing is left at `directory` then.
    @discardableResult
    public static func restore(from backup: String, to directory: String) async throws -> StoreCopyReport {
        let source = URL(fileURLWithPath: backup).standardizedFileURL
        let target = URL(fileURLWithPath: directory).standardizedFileURL
        guard FileManager.default.fileExists(atPath: source.appendingPathComponent("log/data.mdb").path) else {
            throw AccountStoreError.storeTransfer("\(source.path) holds no backup (no log/data.mdb)")
        }
        try StoreFolders.checkFree(target)
        let staging = try StoreFolders.makeStaging(beside: target, purpose: "restoring")
        do {
            // The copies and the check read whole files: on a thread of their own.
            let pool = BlockingPool(threads: 1, name: "restore")
            defer { pool.shutdown() }
            try await pool.run {
                for part in ["log/data.mdb", "projections/data.mdb", "keys/vault"] {
                    let from = source.appendingPathComponent(part)
                    guard FileManager.default.fileExists(atPath: from.path) else { continue }
                    let to = staging.appendingPathComponent(part)
                    try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try FileManager.default.copyItem(at: from, to: to)
                }
            }
            var options = EventLogOptions()
            options.readOnly = true
            let vaultPath = staging.appendingPathComponent("keys/vault").path
            let log = try EventLog(path: staging.appendingPathComponent("log").path, options: options)
            let vault: KeyVault?
            do {
                vault = try await StoreKeyingCheck.checkRecorded(log: log, vaultPath: vaultPath)
                await log.close()
            } catch {
                await log.close()
                throw error
            }
            vault?.release()
            let report = try await pool.run { try checkCopy(at: staging, against: nil, vault: vault) }
            try StoreFolders.moveIntoPlace(staging, target)
            return StoreCopyReport(directory: target.path, lastPosition: report.lastPosition, headHash: report.headHash, vaultID: report.vaultID)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    /// Turns crypto-shredding on for a store created without it: a new store with a new key vault
    /// is built beside it from its log (same records, positions and chain hashes; user-id claims
    /// re-made as HMACs) and takes its place. The old folder is kept beside it, renamed, and its
    /// path returned: delete it once the new store checks out, as it holds every value in the
    /// clear. Events written before the migration stay unsealed in the log (the chain covers
    /// them), so deleting an account later destroys only what was written after this.
    ///
    /// No other process may have the store open meanwhile; one that has is refused.
    ///
    /// - Parameters:
    ///   - directory: The folder of the store, which no process may have open.
    ///   - progress: Called with the records copied so far and the log's last position.
    /// - Returns: The path the old folder was renamed to (the store's folder name with a `.plain-`
    ///   suffix and the time).
    /// - Throws: ``AccountStoreError/storeTransfer(_:)`` when another process has the store open, the
    ///   store has a key vault already or its log records one, or the old folder cannot be renamed;
    ///   or a log, file or key-vault error while building the new store.
    public static func enableCryptoShredding(directory: String, progress: ((UInt64, UInt64) -> Void)? = nil) async throws -> String {
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        let lock = try StoreLock(directory: root.path, exclusive: true)
        defer { lock.release() }
        guard !FileManager.default.fileExists(atPath: root.appendingPathComponent("keys/vault").path) else {
            throw AccountStoreError.storeTransfer("the store at \(root.path) has a key vault already")
        }
        var options = EventLogOptions()
        options.readOnly = true
        let log = try EventLog(path: root.appendingPathComponent("log").path, options: options)
        defer { log.close() }
        if let bytes = try log.metadata(StoreKeying.metadataName), StoreKeying(encoded: bytes) != .plain {
            throw AccountStoreError.storeTransfer("the log at \(log.path) records a key vault; restore its keys/vault instead")
        }
        let total = try log.lastPosition()
        let fresh = root.deletingLastPathComponent().appendingPathComponent(".\(root.lastPathComponent).shredding")
        try? FileManager.default.removeItem(at: fresh)
        var batch: [RecordedEvent] = []
        var next: UInt64 = 1
        let source: StoreBuilder.Source = {
            if batch.isEmpty {
                batch = try log.read(from: next, limit: 1_024).reversed()
            }
            guard let record = batch.popLast() else { return nil }
            next = record.position + 1
            return (ExportedRecord(record), "position \(record.position)")
        }
        _ = try await StoreBuilder.build(at: fresh.path, vault: nil, progress: { progress?($0, total) }, next: source)
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let kept = root.deletingLastPathComponent().appendingPathComponent("\(root.lastPathComponent).plain-\(stamp)")
        guard rename(root.path, kept.path) == 0 else {
            throw AccountStoreError.storeTransfer("cannot rename \(root.path): \(String(cString: strerror(errno)))")
        }
        try StoreFolders.moveIntoPlace(fresh, root)
        return kept.path
    }
}

/// A lock on a store's folder (`store.lock`): every open store holds it shared; a migration or a
/// restore into the folder needs it alone.
final class StoreLock: Sendable {
    let descriptor: Int32

    init(directory: String, exclusive: Bool) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/store.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AccountStoreError.storeTransfer("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 else {
            close(fd)
            throw AccountStoreError.storeTransfer(
                exclusive
                    ? "the store at \(directory) is open in another process: stop it first"
                    : "the store at \(directory) is being migrated by another process: open it when that is done")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    func release() { _ = flock(descriptor, LOCK_UN) }
}

extension AccountStore {
    /// Verifies the log of the store in `directory` (or at `logLocation`) without writing
    /// anything: an LMDB log is opened read-only (its unindexed tail is checked in memory, not
    /// indexed; nothing is upgraded), and neither the projections nor the key vault are opened.
    /// An auditor's check, safe beside a running server.
    ///
    /// - Parameters:
    ///   - directory: the store's folder.
    ///   - logLocation: as ``AccountStoreOptions/logLocation`` (nil: the folder's own `log/`).
    ///   - progress: called as the check advances.
    /// - Returns: the report: intact, or the first problem and where.
    /// - Throws: the log's errors when it cannot be opened or read.
    public static func verifyLog(
        directory: String, logLocation: String? = nil, progress: (@Sendable (VerificationProgress) -> Void)? = nil
    ) async throws -> VerificationReport {
        let location = try LogLocation(logLocation, storeFolder: URL(fileURLWithPath: directory))
        let log = try await location.open(sync: .durable, clock: { Date() }, readOnly: true)
        do {
            let report = try await log.verify(progress: progress)
            await log.close()
            return report
        } catch {
            await log.close()
            throw error
        }
    }
}
