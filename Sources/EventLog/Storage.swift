//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

/// The log's named databases and their key encodings (FORMAT.md, "Sub-databases").
struct LogDatabases: Sendable {
    /// `format-version` → u32, `log-id` → 16 bytes, `created` → i64 µs.
    let meta: Database
    /// u64 position → record.
    let records: Database
    /// stream id, 0x00, u64 version → u64 position.
    let streams: Database
    /// 16-byte event id → u64 position.
    let eventIDs: Database
    /// claim (a unique key, UTF-8) → the stream id that holds it.
    let claims: Database

    static let names = (meta: "meta", records: "records", streams: "streams", eventIDs: "event-ids", claims: "claims")

    init(environment: Environment, create: Bool) throws {
        meta = try environment.openDatabase(Self.names.meta, create: create)
        records = try environment.openDatabase(Self.names.records, create: create)
        streams = try environment.openDatabase(Self.names.streams, create: create)
        eventIDs = try environment.openDatabase(Self.names.eventIDs, create: create)
        claims = try environment.openDatabase(Self.names.claims, create: create)
    }

    static func streamKey(_ streamID: String, version: UInt64) -> [UInt8] {
        var key = Array(streamID.utf8)
        key.reserveCapacity(key.count + 9)
        key.append(0)
        key.append(contentsOf: BigEndian.bytes(version))
        return key
    }

    static func eventIDKey(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    /// The stream's last version, 0 when it does not exist.
    static func streamVersion(_ streamID: String, in txn: Transaction, streams: Database) throws -> UInt64 {
        let prefix = Array(streamID.utf8) + [0]
        return try txn.withCursor(streams) { cursor in
            // The first key after every version of this stream, then one step back.
            guard let entry = try cursor.seek(before: Array(streamID.utf8) + [1]) else { return 0 }
            guard entry.key.count == prefix.count + 8, entry.key.starts(with: prefix) else { return 0 }
            return BigEndian.uint64(entry.key, at: prefix.count)
        }
    }
}

extension LogDatabases {
    /// The `meta` key of the last position whose index entries are in `streams` and `event-ids`.
    static let indexedThroughKey = Array("indexed-through".utf8)

    /// The last position whose entries are in the indexes (FORMAT.md, "Deferred indexing"); the
    /// records after it are the unindexed tail. A log without the key (format 1) is indexed
    /// through `head`, its last position.
    func indexedThrough(_ txn: Transaction, head: UInt64, path: String) throws -> UInt64 {
        guard let bytes = try txn.get(meta, key: Self.indexedThroughKey) else { return head }
        guard bytes.count == 8 else {
            throw EventLogError.notAnEventLog(path: path, reason: "its indexed-through value has \(bytes.count) bytes, not 8")
        }
        let value = bytes.withUnsafeBytes { BigEndian.uint64($0) }
        guard value <= head else {
            throw EventLogError.notAnEventLog(path: path, reason: "it is indexed through position \(value) but ends at \(head)")
        }
        return value
    }

    /// Records that the indexes hold every entry up to `position`.
    func setIndexedThrough(_ txn: Transaction, _ position: UInt64) throws {
        try txn.put(meta, key: Self.indexedThroughKey, value: BigEndian.bytes(position))
    }

    /// The last position (the last key of `records`), 0 when empty; the record itself is not read.
    func lastPosition(_ txn: Transaction) throws -> UInt64 {
        try txn.withCursor(records) { cursor in
            try cursor.last().map { $0.key.count == 8 ? BigEndian.uint64($0.key) : 0 } ?? 0
        }
    }
}

/// The end of the log as the writer needs it: last position, its hash and timestamp.
struct LogHead: Sendable {
    var position: UInt64
    var hash: ChainHash
    var timestampMicros: Int64

    static let empty = LogHead(position: 0, hash: .genesis, timestampMicros: 0)

    /// Reads the last record's position, hash and time, checking its checksum first.
    static func read(_ txn: Transaction, records: Database, path: String) throws -> LogHead {
        try txn.withCursor(records) { cursor in
            guard let entry = try cursor.last() else { return .empty }
            guard entry.key.count == 8 else {
                throw EventLogError.notAnEventLog(path: path, reason: "a records key has \(entry.key.count) bytes, not 8")
            }
            let position = BigEndian.uint64(entry.key)
            let record = try RecordView(entry.value, position: position, path: path)
            return LogHead(
                position: position, hash: record.hash,
                timestampMicros: Int64(bitPattern: BigEndian.uint64(entry.value, at: RecordFormat.Offset.timestamp)))
        }
    }
}
