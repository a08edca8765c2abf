//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Projections

/// The details cache: every account's current state, folded from the log and kept in LMDB. Every
/// account event is applied (security and external ones only move the version and the login
/// counters), so a cached state always equals the fold of its stream up to the checkpoint.
/// Its fingerprint covers its own version and the schema evolution, so a new upcaster rebuilds it.
public struct AccountDetailsProjection: Projection {
    /// The name the projection is registered under.
    public static let projectionName = "account-details"
    /// Bump when the stored form or the folding changes.
    static let version = 5

    /// The upcasters applied to old events while replaying.
    public let evolution: SchemaEvolution
    /// The per-account keys: cached states of live accounts are sealed with them.
    public let vault: KeyVault?

    /// A details cache reading events through `evolution`, sealing states with `vault` when given.
    ///
    /// - Parameters:
    ///   - evolution: The key changes to apply to old events; none by default.
    ///   - vault: The key vault whose keys seal the cached states, or nil to cache them in the clear.
    public init(evolution: SchemaEvolution = SchemaEvolution(), vault: KeyVault? = nil) {
        self.evolution = evolution
        self.vault = vault
    }

    /// The projection name.
    public var name: String { Self.projectionName }
    /// Changes with the projection version and the evolution; a change triggers a rebuild.
    public var fingerprint: String { "account-details v\(Self.version); keys: \(evolution.fingerprint)" }
    /// The LMDB databases it keeps.
    public var databaseNames: [String] { ["accounts"] }
    /// An account's state is the fold of its own stream: a rebuild may apply the log account by
    /// account (each state folded once and written once).
    public var buildsStreamByStream: Bool { true }

    /// Folds one record into its account's state (kept for the batch).
    ///
    /// This is the rebuild's inner loop: the type is matched on its bytes, and an account already
    /// in the batch is changed in place, found by a key that needs no allocation; the account id
    /// becomes a String only for a state the batch does not hold yet.
    ///
    /// - Parameters:
    ///   - record: The next record of the log; records of types this build does not know are skipped.
    ///   - state: The projection's storage, read for an account the batch does not hold yet.
    ///   - batch: The states changed so far in this batch; the record's account is updated in it.
    /// - Throws: ``PayloadDecodingError`` for a payload that does not parse,
    ///   ``SchemaEvolution/UpcastError`` when an upcast fails, ``KeyVaultError`` when a key cannot be
    ///   read or a deleted account's key cannot be shredded, or the storage's read error. The
    ///   projection stops at the record then.
    public func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Batch) throws {
        // Types this build does not know (written by a newer one) stay in the log for the build
        // that knows them; they never stop the cache.
        guard let kind = record.withTypeBytes({ AccountEvent.Kind(nameBytes: $0) }) else { return }
        let key = record.withStreamIDBytes { StreamKey($0) }
        // The commonest record, for an account the batch holds, in plain form and needing no
        // upcast: applied straight from its bytes.
        if kind == .detailsModified, let index = batch.states.index(forKey: key), keysVersion(of: record) >= evolution.currentVersion {
            let applied = try record.withPayload { payload in
                guard !Sealing.isSealed(payload) else { return false }
                try batch.states.values[index].applyDetailsModified(payload: payload, version: record.streamVersion, at: record.timestamp)
                return true
            }
            if applied { return }
        }
        let event = try record.withPayload { try AccountEvent.decode(kind, payload: $0, accountId: record.streamID, vault: vault) }
        let upcast = try evolution.upcast(event, writtenAt: keysVersion(of: record))
        if let index = batch.states.index(forKey: key), !upcast.startsAccount {
            batch.states.values[index].apply(upcast, version: record.streamVersion, at: record.timestamp)
        } else {
            // States are decoded once per batch and written back in finishBatch.
            let accountId = record.streamID
            let previous =
                try batch.states[key]
                ?? state.get("accounts", key: key.bytes).flatMap { try Self.decodeState($0, accountId: accountId, vault: vault) }
            guard
                let next = AccountState.applying(
                    upcast, to: previous, accountId: accountId,
                    version: record.streamVersion, at: record.timestamp)
            else { return }
            batch.states[key] = next
        }
        // Whoever meets a deletion in the log destroys the key, in every process: the deleting
        // process may have died between its append and its own shred.
        if case .accountDeleted = upcast { try vault?.shred(record.streamID) }
    }

    /// A fresh, empty batch.
    ///
    /// - Returns: A batch that holds no states.
    public func makeBatchState() -> Batch { Batch() }

    /// Writes the batch's changed states.
    ///
    /// - Parameters:
    ///   - batch: The states the batch changed; it is emptied.
    ///   - state: The projection's storage, which the states are written to (sealed when there is a key).
    /// - Throws: The storage's write error, or ``KeyVaultError`` when a key cannot be read.
    public func finishBatch(_ batch: inout Batch, state: ProjectionState) throws {
        for (key, next) in batch.states {
            try state.put("accounts", key: key.bytes, value: try Self.encodeState(next, vault: vault))
        }
        batch.states.removeAll(keepingCapacity: true)
    }

    /// The states changed in the current batch, by stream id: an account touched by ten records
    /// of a batch is decoded and stored once.
    public struct Batch {
        var states: [StreamKey: AccountState] = [:]
    }

    /// A stream id's bytes as a dictionary key. Ids of up to 40 bytes (the store's account ids are
    /// 36) are held in five words, so making, hashing and comparing a key allocates nothing;
    /// longer ones are kept in an array.
    struct StreamKey: Hashable {
        private var words: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        private let count: Int
        private var overflow: [UInt8]?

        init(_ bytes: UnsafeRawBufferPointer) {
            count = bytes.count
            if count > 40 {
                overflow = Array(bytes)
            } else if let base = bytes.baseAddress {
                withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base, byteCount: count) }
            }
        }

        /// The stream id's bytes.
        var bytes: [UInt8] {
            if let overflow { return overflow }
            var words = words
            return withUnsafeBytes(of: &words) { Array($0.prefix(count)) }
        }

        static func == (lhs: StreamKey, rhs: StreamKey) -> Bool {
            lhs.count == rhs.count && lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
                && lhs.words.3 == rhs.words.3 && lhs.words.4 == rhs.words.4 && lhs.overflow == rhs.overflow
        }

        func hash(into hasher: inout Hasher) {
            if let overflow {
                overflow.withUnsafeBytes { hasher.combine(bytes: $0) }
                return
            }
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
            hasher.combine(words.4)
        }
    }

    private func keysVersion(of record: some LogRecord) -> Int {
        guard evolution.currentVersion > 1 else { return 1 }
        return record.metadata.extra[SchemaEvolution.metadataKey].flatMap(Int.init) ?? 1
    }

    /// The stored form. Without a key: the plain state. With one (a live account): `0x03`, the
    /// state without its personal fields (`u32` big-endian length + bytes), then the user id, password hash
    /// and values sealed with the account's key. So a state whose key is destroyed still reads as
    /// the account's skeleton (dates, version, counters), exactly what a replay of it yields.
    static func encodeState(_ state: AccountState, vault: KeyVault?) throws -> [UInt8] {
        guard !state.isDeleted, let key = try vault?.key(for: state.accountId) else { return state.encoded() }
        var writer = PayloadWriter()
        writer.string(state.userId)
        writer.optionalString(state.passwordHash)
        writer.values(state.values)
        // Then, when any is linked: the identities (sealed: a subject names a person at its provider).
        if !state.identities.isEmpty {
            writer.varint(UInt64(state.identities.count))
            for identity in state.identities.sorted() {
                writer.string(identity.issuer)
                writer.string(identity.subject)
            }
        }
        let personal = try Sealing.seal(writer.bytes, key: key, accountId: state.accountId, label: "state")
        let skeleton = state.withoutPersonalData().encoded()
        return [sealedStateMarker] + KeyVault.bigEndian(UInt32(skeleton.count)) + skeleton + personal
    }

    static let sealedStateMarker: UInt8 = 3

    /// Reads the stored form; a sealed state whose key was destroyed reads as deleted, without details.
    static func decodeState(_ bytes: [UInt8], accountId: String, vault: KeyVault?) throws -> AccountState {
        guard bytes.first == sealedStateMarker else { return try AccountState(encoded: bytes) }
        guard bytes.count >= 5 else { throw PayloadDecodingError.truncated(field: "state", offset: bytes.count) }
        let offset = 5
        let length = Int(KeyVault.uint32(bytes, at: 1))
        guard length <= bytes.count - offset else { throw PayloadDecodingError.truncated(field: "state", offset: offset) }
        var state = try AccountState(encoded: Array(bytes[offset..<(offset + length)]))
        guard let key = try vault?.key(for: accountId) else { return state.shreddedSkeleton() }
        let personal = try bytes[(offset + length)...].withUnsafeBytes { try Sealing.open($0, key: key, accountId: accountId, label: "state") }
        try personal.withUnsafeBytes { raw in
            var reader = try PayloadReader(raw)
            state.userId = try reader.string("userId")
            state.passwordHash = try reader.optionalString("passwordHash")
            state.values = try reader.values("values")
            if !reader.isAtEnd {
                let count = try reader.varint("identities")
                guard count <= PayloadReader.maximumFieldLength else {
                    throw PayloadDecodingError.truncated(field: "identities", offset: reader.offset)
                }
                for _ in 0..<count {
                    state.identities.insert(LinkedIdentity(issuer: try reader.string("issuer"), subject: try reader.string("subject")))
                }
            }
            try reader.finish()
        }
        return state
    }

    /// Reads one account's state from the store's serving generation.
    ///
    /// - Parameters:
    ///   - accountId: The account to read.
    ///   - store: The projection store that runs this projection.
    ///   - vault: The key vault that opens sealed states; without it, or without the account's key, a
    ///     sealed state reads as a deleted account without details.
    /// - Returns: The cached state, deleted accounts included, or nil when the cache has no entry.
    /// - Throws: `ProjectionError` when the store is closed or does not run this projection,
    ///   ``PayloadDecodingError`` for a stored state that does not parse, ``KeyVaultError``, or an
    ///   error for a damaged seal.
    public static func state(of accountId: String, in store: ProjectionStore, vault: KeyVault? = nil) throws -> AccountState? {
        try store.read(projectionName) { state in
            try state.get("accounts", key: Array(accountId.utf8)).map { try decodeState($0, accountId: accountId, vault: vault) }
        }
    }

    /// Calls `body` with every account's state, in account-id order.
    ///
    /// - Parameters:
    ///   - store: The projection store that runs this projection.
    ///   - vault: The key vault that opens sealed states (see `state(of:in:vault:)`).
    ///   - body: Called with each account's state.
    /// - Throws: What `body` throws (which stops the iteration), or the errors of reading a state
    ///   (see `state(of:in:vault:)`).
    public static func forEachAccount(in store: ProjectionStore, vault: KeyVault? = nil, _ body: (AccountState) throws -> Void) throws {
        try store.read(projectionName) { state in
            try state.forEach("accounts") { key, value in
                let accountId = String(decoding: key, as: UTF8.self)
                try body(try decodeState(Array(value), accountId: accountId, vault: vault))
                return true
            }
        }
    }
}
