//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat
import Synchronization

/// One index entry of a record in the tail: its stream version and position.
struct TailStreamEntry: Sendable, Equatable {
    let version: UInt64
    let position: UInt64
}

/// The index entries of one record: its stream, version, position and event id.
struct TailItem: Sendable {
    let stream: String
    let version: UInt64
    let position: UInt64
    let eventID: UUID

    /// The stream id's first 16 UTF-8 bytes (zeros after a shorter id) as two big-endian words:
    /// where they differ, they order two items as their ids do; where they are equal, the ids
    /// (and versions) must be compared.
    var streamLeadingBytes: (UInt64, UInt64) {
        var bytes: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) { bytes in
            var stream = stream
            stream.withUTF8 { utf8 in bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8).prefix(16))) }
        }
        return (UInt64(bigEndian: bytes.0), UInt64(bigEndian: bytes.1))
    }

    /// The event id's place in the `event-ids` database's order (its bytes, compared as two
    /// big-endian words).
    var eventIDOrder: (UInt64, UInt64) { Self.order(of: eventID) }

    /// An event id's place in the `event-ids` database's order.
    static func order(of eventID: UUID) -> (UInt64, UInt64) {
        withUnsafeBytes(of: eventID.uuid) { order(ofKey: $0) }
    }

    /// The place of an `event-ids` key (16 bytes) in that database's order.
    static func order(ofKey key: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        (BigEndian.uint64(key, at: 0), BigEndian.uint64(key, at: 8))
    }
}

/// An event id as a dictionary key: its two halves, each fed to the hasher as a word (UUID's
/// own `Hashable` feeds its 16 bytes as a buffer, the hasher's slow path). Both halves, so that
/// ids chosen by a client cannot be made to collide.
struct EventIDKey: Hashable {
    let high: UInt64
    let low: UInt64

    init(_ eventID: UUID) {
        (high, low) = withUnsafeBytes(of: eventID.uuid) {
            ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
    }
}

/// A tail item's place in an index's order (``TailItem/streamLeadingBytes`` or
/// ``TailItem/eventIDOrder``), and where it is in the items being sorted.
struct SortKey {
    let leading: (UInt64, UInt64)
    let index: Int
}

/// The index entries of the records after `indexed-through` (the log's *tail*), in memory.
///
/// A commit writes its records only; the `streams` and `event-ids` databases are brought up to
/// date every ``EventLogOptions/indexTailLimit`` records, in one later commit (FORMAT.md,
/// "Deferred indexing"). Until then a lookup asks the databases and this tail. The tail is
/// derived from the records alone, so a crash loses nothing: the next lookup rebuilds it from
/// the records after `indexed-through`, and so does another process that shares the log.
struct TailState: Sendable {
    /// The `indexed-through` the entries continue.
    private(set) var base: UInt64 = 0
    /// The last position the entries cover: records `base + 1 ... through` are in.
    private(set) var through: UInt64 = 0
    /// False until the first sync: nothing is known yet.
    private(set) var loaded = false
    private var streams: [String: [TailStreamEntry]] = [:]
    private var ids: [EventIDKey: UInt64] = [:]
    private var order: [TailItem] = []

    /// How many records the entries cover.
    var count: Int { Int(through - base) }

    init() {}

    /// An empty tail after `base`.
    init(base: UInt64) {
        reset(base: base)
    }

    /// Forgets every entry: the records up to `base` are in the databases.
    mutating func reset(base: UInt64) {
        self.base = base
        through = base
        loaded = true
        streams.removeAll(keepingCapacity: true)
        ids.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
    }

    /// Adds the entries of the record at `through + 1`.
    mutating func add(stream: String, version: UInt64, position: UInt64, eventID: UUID) {
        add(stream: stream, firstVersion: version, firstPosition: position, eventIDs: CollectionOfOne(eventID))
    }

    /// Adds the entries of consecutive records of one stream, from `through + 1` on (the stream's
    /// entries are looked up once for all of them).
    mutating func add(stream: String, firstVersion: UInt64, firstPosition: UInt64, eventIDs: some Sequence<UUID>) {
        precondition(firstPosition == through + 1, "the tail grows one position at a time")
        var count: UInt64 = 0
        for eventID in eventIDs {
            ids[EventIDKey(eventID)] = firstPosition + count
            order.append(TailItem(stream: stream, version: firstVersion + count, position: firstPosition + count, eventID: eventID))
            count += 1
        }
        streams[stream, default: []].append(
            contentsOf: (0..<count).lazy.map { TailStreamEntry(version: firstVersion + $0, position: firstPosition + $0) })
        through = firstPosition + count - 1
    }

    /// The stream's last version among the records up to `head`, or nil when the tail holds none.
    func lastVersion(of stream: String, upTo head: UInt64) -> UInt64? {
        guard let entries = streams[stream] else { return nil }
        return entries.last(where: { $0.position <= head })?.version
    }

    /// The stream's entries from `version` on, among the records up to `head`.
    func entries(of stream: String, from version: UInt64, upTo head: UInt64) -> ArraySlice<TailStreamEntry> {
        guard let entries = streams[stream] else { return [] }
        let start = entries.firstIndex(where: { $0.version >= version }) ?? entries.endIndex
        let end = entries.lastIndex(where: { $0.position <= head }).map { $0 + 1 } ?? entries.startIndex
        return start < end ? entries[start..<end] : []
    }

    /// Drops the entries of the records after `position` (a write transaction's, when it did not
    /// commit).
    mutating func truncate(after position: UInt64) {
        while let last = order.last, last.position > position {
            order.removeLast()
            streams[last.stream]?.removeLast()
            if streams[last.stream]?.isEmpty == true { streams[last.stream] = nil }
            ids[EventIDKey(last.eventID)] = nil
        }
        through = max(base, min(through, position))
    }

    /// Each stream's first entry in the tail.
    var firstEntries: [String: TailStreamEntry] { streams.compactMapValues(\.first) }

    /// The position of the event with this id among the records up to `head`, or nil.
    func position(of eventID: UUID, upTo head: UInt64) -> UInt64? {
        guard let position = ids[EventIDKey(eventID)], position <= head else { return nil }
        return position
    }

    /// Every entry, oldest first: what a flush writes into the databases.
    var items: [TailItem] { order }

    /// Adds the entries of the records up to `head` that it lacks. On a failure it forgets
    /// everything (the next reader builds it again from the records) and rethrows.
    mutating func catchUp(_ txn: Transaction, records: Database, upTo head: UInt64, path: String) throws {
        guard through < head else { return }
        do {
            try scan(txn, records: records, upTo: head, path: path)
        } catch {
            self = TailState()
            throw error
        }
    }

    /// Reads the records `through + 1 ... head` in `txn` and adds their entries.
    mutating func scan(_ txn: Transaction, records: Database, upTo head: UInt64, path: String) throws {
        guard head > through else { return }
        try txn.withCursor(records) { cursor in
            var entry = try cursor.seek(atOrAfter: BigEndian.bytes(through + 1))
            while let current = entry, through < head {
                let position = BigEndian.uint64(current.key)
                guard position == through + 1 else {
                    throw EventLogError.corruptRecord(
                        position: through + 1, reason: "the record is missing (the next one is at \(position))", path: path)
                }
                let record = try RecordView(current.value, position: position, path: path)
                let stream = record.streamID
                let expected = (lastVersion(of: stream, upTo: head) ?? 0) + 1
                if expected > 1 && record.streamVersion != expected {
                    throw EventLogError.corruptRecord(
                        position: position,
                        reason: "\"\(stream)\" version \(record.streamVersion) follows its version \(expected - 1) in the unindexed tail",
                        path: path)
                }
                add(stream: stream, version: record.streamVersion, position: position, eventID: record.eventID)
                entry = try cursor.next()
            }
        }
    }
}

/// The tail of one open log, shared by its writer and its readers (see ``TailState``).
final class IndexTail: Sendable {
    private let state = Mutex(TailState())
    private let databases: LogDatabases
    private let path: String

    init(databases: LogDatabases, path: String) {
        self.databases = databases
        self.path = path
    }

    /// Calls `body` with the tail as of `txn`'s snapshot and that snapshot's last position; the
    /// caller filters by it (the shared tail may run ahead of an older snapshot). Brings the
    /// shared tail up to date when the snapshot is newer; builds a private one for a snapshot
    /// older than the shared tail's last flush.
    func withSnapshot<Result>(_ txn: Transaction, _ body: (borrowing TailState, _ head: UInt64) throws -> Result) throws -> Result {
        let head = try databases.lastPosition(txn)
        let indexed = try databases.indexedThrough(txn, head: head, path: path)
        return try state.withLock { tail in
            if !tail.loaded || indexed > tail.base {
                tail.reset(base: indexed)
            } else if indexed < tail.base {
                var older = TailState(base: indexed)
                try older.scan(txn, records: databases.records, upTo: head, path: path)
                return try body(older, head)
            }
            try tail.catchUp(txn, records: databases.records, upTo: head, path: path)
            return try body(tail, head)
        }
    }

    /// Calls `body` with the shared tail (the writer's read of it, inside its write transaction,
    /// after ``beginWrite(_:)`` brought it up to date).
    func withState<Result>(_ body: (borrowing TailState) throws -> Result) rethrows -> Result {
        try state.withLock { tail in try body(tail) }
    }

    /// Starts a write transaction's use of the tail: brings it to exactly the records `txn` sees
    /// (dropping any entries a transaction that did not commit left), and returns how many
    /// records it holds.
    ///
    /// The writer adds each record's entries as it writes the record (``add(stream:firstVersion:firstPosition:eventIDs:)``),
    /// before the commit, so that its later appends in the same transaction find them, and a
    /// commit costs no second pass over its records. Readers never see those entries: every
    /// lookup is bounded by the last position of the reader's snapshot, and no snapshot reaches
    /// past the last commit.
    func beginWrite(_ txn: Transaction) throws -> Int {
        let head = try databases.lastPosition(txn)
        let indexed = try databases.indexedThrough(txn, head: head, path: path)
        return try state.withLock { tail in
            if !tail.loaded || indexed != tail.base { tail.reset(base: indexed) }
            if tail.through > head { tail.truncate(after: head) }
            try tail.catchUp(txn, records: databases.records, upTo: head, path: path)
            return tail.count
        }
    }

    /// Adds the entries of one append's records (consecutive positions and versions), written
    /// in the writer's open transaction.
    func add(stream: String, firstVersion: UInt64, firstPosition: UInt64, eventIDs: some Sequence<UUID>) {
        state.withLock { tail in tail.add(stream: stream, firstVersion: firstVersion, firstPosition: firstPosition, eventIDs: eventIDs) }
    }

    /// After a write transaction that did not commit: drops the entries of its records (those
    /// after `committed`, the last position of the log).
    func discardUncommitted(after committed: UInt64) {
        state.withLock { tail in tail.truncate(after: committed) }
    }

    /// After a commit that wrote the index up to `indexedThrough`.
    func flushed(through indexedThrough: UInt64) {
        state.withLock { tail in tail.reset(base: indexedThrough) }
    }
}
