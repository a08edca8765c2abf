//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLog
import EventLogProtocol
import Foundation

/// Builds a new store from a stream of records (an export, or another store's log) in a folder
/// beside its target, and moves it into place only once every record checked out.
enum StoreBuilder {
    /// The next record and where it came from (for error messages), or nil at the end.
    typealias Source = () throws -> (record: ExportedRecord, origin: String)?

    /// Builds the store at `directory`, which must not exist or be an empty folder.
    static func build(at directory: String, vault vaultFile: URL?, progress: ((UInt64) -> Void)?, next: Source) async throws -> UInt64 {
        let target = URL(fileURLWithPath: directory).standardizedFileURL
        try StoreFolders.checkFree(target)
        let staging = try StoreFolders.makeStaging(beside: target, purpose: "importing")
        do {
            let count = try await fill(staging, vault: vaultFile, progress: progress, next: next)
            try StoreFolders.moveIntoPlace(staging, target)
            return count
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    /// Appends every record to a new LMDB log in `root` with the original positions, ids, times
    /// and payloads, checks each chain hash, re-makes the user-id claims and records the keying.
    static func fill(_ root: URL, vault vaultFile: URL?, progress: ((UInt64) -> Void)?, next: Source) async throws -> UInt64 {
        let vaultPath = root.appendingPathComponent("keys/vault")
        if let vaultFile {
            try FileManager.default.createDirectory(at: vaultPath.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: vaultFile, to: vaultPath)
        }
        let vault = try KeyVault(path: vaultPath.path, create: vaultFile == nil)
        defer { vault.release() }
        var options = EventLogOptions()
        options.sync = .relaxed
        let log = try EventLog(path: root.appendingPathComponent("log").path, options: options)
        do {
            let count = try await fill(log, vault: vault, progress: progress, next: next)
            await log.close()
            return count
        } catch {
            await log.close()
            throw error
        }
    }

    /// Appends every record to `log`, which must be empty, with the original positions, ids,
    /// times and payloads, checks each chain hash, re-makes the user-id claims (keyed by `vault`)
    /// and records the keying; the log is synced at the end.
    static func fill(_ log: any EventLogBackend, vault: KeyVault, progress: ((UInt64) -> Void)?, next: Source) async throws -> UInt64 {
        let accounts = AccountLog(log: log, vault: vault)
        var claimBook = ClaimBook()
        var expected: UInt64 = 1
        var chunk: [(record: ExportedRecord, append: StreamAppend)] = []
        while let (record, origin) = try next() {
            guard record.position == expected else {
                throw LogTransferError.outOfOrder(line: origin, position: record.position, expected: expected)
            }
            if record.payload.first == Sealing.version, try !vault.hasSlot(record.stream) {
                throw LogTransferError.missingKey(position: record.position, account: record.stream)
            }
            let (claims, releases) = try claimBook.changes(record, origin: origin, accounts: accounts)
            let metadata = EventMetadata(
                actor: record.actor, correlationID: record.correlationID, causationID: record.causationID, extra: record.extra)
            let proposed = ProposedEvent(
                eventID: record.eventID, type: record.type, schemaVersion: record.schemaVersion, metadata: metadata, payload: record.payload)
            // Each record keeps its own time; the log never lets times go back.
            let time = Date(timeIntervalSince1970: Double(record.timestampMicros) / 1_000_000)
            chunk.append(
                (
                    record,
                    StreamAppend(
                        streamID: record.stream, events: [proposed], timestamps: [time],
                        expectedVersion: record.streamVersion == 1 ? .noStream : .exact(record.streamVersion - 1), claims: claims,
                        releases: releases)
                ))
            expected += 1
            if chunk.count == chunkSize {
                try await appendChecked(chunk, to: log)
                chunk.removeAll(keepingCapacity: true)
                progress?(expected - 1)
            }
        }
        try await appendChecked(chunk, to: log)
        _ = try await log.setMetadataIfAbsent(StoreKeying.metadataName, StoreKeying(vault).encoded)
        try await log.sync()
        progress?(expected - 1)
        return expected - 1
    }

    /// Records appended with one suspension: enough to share commits, few enough to stay small.
    static let chunkSize = 1_000

    /// Appends a chunk of records in one batch, then checks that each landed at its own position
    /// with its exported chain hash.
    private static func appendChecked(_ chunk: [(record: ExportedRecord, append: StreamAppend)], to log: any EventLogBackend) async throws {
        guard let first = chunk.first?.record.position else { return }
        let outcomes = await log.appendBatch(chunk.map(\.append))
        for ((record, _), outcome) in zip(chunk, outcomes) {
            guard case let .success(result) = outcome, result.positions.upperBound == record.position, !result.wasDuplicate else {
                if case let .failure(error) = outcome, !(error is EventLogError) { throw error }
                throw LogTransferError.hashMismatch(position: record.position)
            }
        }
        let stored = try await log.read(from: first, direction: .forward, limit: chunk.count)
        for ((record, _), written) in zip(chunk, stored) where written.position != record.position || written.hash.description != record.hash {
            throw LogTransferError.hashMismatch(position: record.position)
        }
        guard stored.count == chunk.count else { throw LogTransferError.hashMismatch(position: first + UInt64(stored.count)) }
    }

    /// The user-id claims of the store being built: which claim each stream holds, and who holds each.
    ///
    /// An account takes the claim of its normalized user id (``AccountLog/claim(forUserId:)``), or,
    /// when an account earlier in the log took that one (their user ids collide under
    /// ``UserIdNormalization`` and were written before it), the claim of its user id trimmed and
    /// lowercased, as it was written (``AccountLog/legacyClaim(forUserId:)``). Logins then find the
    /// same accounts as in the store exported.
    ///
    /// Each account also takes its user id's skeleton claims (``AccountLog/skeletonClaims(forUserId:)``)
    /// unless an account earlier in the log holds it (look-alikes written before the store checked
    /// them; `accountctl user-ids` names them): an import or a move gives every account of an older
    /// log the skeleton claims a new store keeps.
    struct ClaimBook {
        private var held: [String: String] = [:]
        private var owners: [String: String] = [:]
        private var heldSkeletons: [String: [String]] = [:]
        private var skeletonOwners: [String: String] = [:]
        private var heldIdentities: [String: Set<String>] = [:]

        /// The claims a record takes and releases (user ids, keyed by the new store's vault).
        ///
        /// A record of a type this build does not know (the audit stream's `admin.*`, a newer
        /// build's event) takes none; one of a known type must decode.
        ///
        /// - Throws: ``LogTransferError/undecodable(line:position:type:reason:)`` naming `origin` for
        ///   an account event that does not decode, or ``LogTransferError/userIdCollision(position:account:holder:)``.
        mutating func changes(
            _ record: ExportedRecord, origin: String, accounts: AccountLog
        ) throws -> (claims: Set<String>, releases: Set<String>) {
            guard let kind = AccountEvent.Kind(name: record.type) else { return ([], []) }
            let event: AccountEvent
            do {
                event = try record.payload.withUnsafeBytes {
                    try AccountEvent.decode(kind, payload: $0, accountId: record.stream, vault: accounts.vault)
                }
            } catch {
                throw LogTransferError.undecodable(line: origin, position: record.position, type: record.type, reason: "\(error)")
            }
            let stream = record.stream
            let (claims, releases) = try userIdChanges(event, kind: kind, stream: stream, at: record.position, accounts: accounts)
            // Provider identities (`account.identity-linked`) hold claims of their own; the deletion releases them.
            switch event {
            case let .identityLinked(issuer, subject):
                let claim = accounts.identityClaim(issuer: issuer, subject: subject)
                heldIdentities[stream, default: []].insert(claim)
                return (claims.union([claim]), releases)
            case let .identityUnlinked(issuer, subject):
                let claim = accounts.identityClaim(issuer: issuer, subject: subject)
                heldIdentities[stream]?.remove(claim)
                return (claims, releases.union([claim]))
            case .accountDisabled:
                return (claims.union([AccountStore.disabledClaim(stream)]), releases)
            case .accountEnabled:
                return (claims, releases.union([AccountStore.disabledClaim(stream)]))
            case .accountDeleted:
                return (claims, releases.union(heldIdentities.removeValue(forKey: stream) ?? []).union([AccountStore.disabledClaim(stream)]))
            default:
                return (claims, releases)
            }
        }

        private mutating func userIdChanges(
            _ event: AccountEvent, kind: AccountEvent.Kind, stream: String, at position: UInt64, accounts: AccountLog
        ) throws -> (claims: Set<String>, releases: Set<String>) {
            // A redacted event (its account's key was destroyed) sets no user id.
            switch kind.declaration.userIdClaim {
            case .none:
                return ([], [])
            case .takes:
                guard let userId = event.userIdSet, !userId.isEmpty else { return ([], []) }
                let taken = try take(userId, for: stream, at: position, accounts: accounts)
                return (Set([taken] + takeSkeleton(userId, for: stream, accounts: accounts)), [])
            case .moves:
                guard let new = event.userIdSet else { return ([], []) }
                let released = Set([release(stream)].compactMap { $0 } + releaseSkeleton(stream))
                let taken = Set(
                    [try take(new, for: stream, at: position, accounts: accounts)] + takeSkeleton(new, for: stream, accounts: accounts))
                return (taken, released.subtracting(taken))
            case .releases:
                return ([], Set([release(stream)].compactMap { $0 } + releaseSkeleton(stream)))
            }
        }

        private mutating func takeSkeleton(_ userId: String, for stream: String, accounts: AccountLog) -> [String] {
            let claims = accounts.skeletonClaims(forUserId: userId).sorted().filter { skeletonOwners[$0].map { $0 == stream } ?? true }
            heldSkeletons[stream] = claims
            for claim in claims { skeletonOwners[claim] = stream }
            return claims
        }

        private mutating func releaseSkeleton(_ stream: String) -> [String] {
            let claims = heldSkeletons.removeValue(forKey: stream) ?? []
            for claim in claims { skeletonOwners[claim] = nil }
            return claims
        }

        private mutating func take(_ userId: String, for stream: String, at position: UInt64, accounts: AccountLog) throws -> String {
            var claim = accounts.claim(forUserId: userId)
            if let owner = owners[claim], owner != stream {
                claim = accounts.legacyClaim(forUserId: userId)
                if let other = owners[claim], other != stream {
                    throw LogTransferError.userIdCollision(position: position, account: stream, holder: other)
                }
            }
            held[stream] = claim
            owners[claim] = stream
            return claim
        }

        private mutating func release(_ stream: String) -> String? {
            guard let claim = held.removeValue(forKey: stream) else { return nil }
            owners[claim] = nil
            return claim
        }
    }
}

/// Folder moves for building a store beside its target.
enum StoreFolders {
    /// Refuses a target that exists and is not an empty folder.
    static func checkFree(_ target: URL) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target.path, isDirectory: &isDirectory) else { return }
        guard isDirectory.boolValue, try FileManager.default.contentsOfDirectory(atPath: target.path).isEmpty else {
            throw LogTransferError.notEmpty(target.path)
        }
    }

    /// A new, hidden folder beside `target` for building it.
    static func makeStaging(beside target: URL, purpose: String) throws -> URL {
        let parent = target.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        let staging = parent.appendingPathComponent(".\(target.lastPathComponent).\(purpose)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: false)
        return staging
    }

    /// Renames `staging` to `target` (replacing an empty folder) and makes the rename durable.
    static func moveIntoPlace(_ staging: URL, _ target: URL) throws {
        if FileManager.default.fileExists(atPath: target.path) { try checkFree(target) }
        _ = rmdir(target.path)
        guard rename(staging.path, target.path) == 0 else {
            throw AccountStoreError.storeTransfer("cannot move \(staging.path) to \(target.path): \(String(cString: strerror(errno)))")
        }
        syncFolder(target.deletingLastPathComponent())
    }

    static func syncFolder(_ folder: URL) {
        VaultFile.syncFolder(folder)
    }
}
