//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

/// Reading: short read transactions that never block the writer; the lookups of streams and
/// event ids see both the indexes and the unindexed tail.
extension EventLog {
    /// Runs `body` in a read transaction, turning storage errors into `EventLogError`s.
    func reading<T>(_ body: (Transaction) throws -> T) throws -> T {
        do {
            return try environment.read(body)
        } catch {
            throw EventLogError.wrapping(error, path: path)
        }
    }

    /// The position of the last record; 0 for an empty log.
    ///
    /// - Returns: the position of the newest committed record, 0 when there is none.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func lastPosition() throws -> UInt64 {
        try reading { txn in try databases.lastPosition(txn) }
    }

    /// The last position whose entries are in the `streams` and `event-ids` indexes; the records
    /// after it (at most ``EventLogOptions/indexTailLimit`` of them, unless a process died before
    /// its next flush) are looked up in memory. Equal to ``lastPosition()`` after a clean close.
    ///
    /// - Returns: the last position the indexes cover.
    /// - Throws: `EventLogError.closed` after `close()`, `.notAnEventLog` for a damaged
    ///   `meta` entry, or `.storage` when the read fails.
    public func indexedThrough() throws -> UInt64 {
        try reading { txn in try databases.indexedThrough(txn, head: try databases.lastPosition(txn), path: path) }
    }

    /// The record at `position`, or nil.
    ///
    /// - Parameter position: the record's position (1 is the first).
    /// - Returns: the record, or nil when no record has that position.
    /// - Throws: `EventLogError.corruptRecord` when the record fails its checksum or does not parse,
    ///   `.closed` after `close()`, or `.storage` when the read fails.
    public func record(at position: UInt64) throws -> RecordedEvent? {
        try reading { txn in
            try BigEndian.bytes(position).withUnsafeBytes { key in
                try txn.get(databases.records, key: key).map { try RecordFormat.decode($0, position: position, path: path) }
            }
        }
    }

    /// Up to `limit` records starting at `position`, forward or backward. Reading backward from a
    /// position past the end starts at the last record.
    ///
    /// - Parameters:
    ///   - position: where to start; forward, the first record at or after it; backward, the last
    ///     record at or before it.
    ///   - direction: whether to read toward newer or older records.
    ///   - limit: the most records to return (0 or less: none).
    /// - Returns: the records, in the order read.
    /// - Throws: `EventLogError.corruptRecord` when a record fails its checks, `.closed` after
    ///   `close()`, or `.storage` when the read fails.
    public func read(from position: UInt64 = 1, direction: ReadDirection = .forward, limit: Int = 1_000) throws -> [RecordedEvent] {
        guard limit > 0 else { return [] }
        return try reading { txn in
            try txn.withCursor(databases.records) { cursor in
                var result: [RecordedEvent] = []
                var entry: Cursor.Entry?
                switch direction {
                case .forward:
                    entry = try cursor.seek(atOrAfter: BigEndian.bytes(max(position, 1)))
                case .backward:
                    entry = try cursor.seek(atOrAfter: BigEndian.bytes(position))
                    if let found = entry, BigEndian.uint64(found.key) != position { entry = try cursor.previous() }
                    if entry == nil && position > 0 { entry = try cursor.last() }
                }
                while let current = entry, result.count < limit {
                    let at = BigEndian.uint64(current.key)
                    if direction == .backward && at > position { break }
                    result.append(try RecordFormat.decode(current.value, position: at, path: path))
                    entry = direction == .forward ? try cursor.next() : try cursor.previous()
                }
                return result
            }
        }
    }

    /// The stream's last version, or nil when it has no events.
    ///
    /// - Parameter streamID: the stream.
    /// - Returns: the version of its last event, or nil when it has none.
    /// - Throws: `EventLogError.invalidStreamID` for an id no stream can have, `.closed` after
    ///   `close()`, or `.storage` when the read fails.
    public func streamVersion(_ streamID: String) throws -> UInt64? {
        try RecordFormat.validate(streamID: streamID)
        let version = try reading { txn in
            try tail.withSnapshot(txn) { state, head in state.lastVersion(of: streamID, upTo: head) }
                ?? LogDatabases.streamVersion(streamID, in: txn, streams: databases.streams)
        }
        return version == 0 ? nil : version
    }

    /// Up to `limit` events of one stream, from `version` on, oldest first.
    ///
    /// - Parameters:
    ///   - streamID: the stream.
    ///   - version: the first stream version to return (1 is the stream's first event).
    ///   - limit: the most events to return.
    /// - Returns: the stream's events, oldest first (empty for a stream that does not exist).
    /// - Throws: `EventLogError.invalidStreamID` for an id no stream can have, `.corruptRecord` when a
    ///   record fails its checks or the index points to a missing one, `.notAnEventLog` for a damaged
    ///   index entry, `.closed` after `close()`, or `.storage` when the read fails.
    public func readStream(_ streamID: String, from version: UInt64 = 1, limit: Int = .max) throws -> [RecordedEvent] {
        try RecordFormat.validate(streamID: streamID)
        return try reading { txn in try readStream(streamID, from: version, limit: limit, txn: txn) }
    }

    func readStream(_ streamID: String, from version: UInt64, limit: Int, txn: Transaction) throws -> [RecordedEvent] {
        let prefix = Array(streamID.utf8) + [0]
        var positions: [UInt64] = try txn.withCursor(databases.streams) { cursor in
            var positions: [UInt64] = []
            var entry = try cursor.seek(atOrAfter: LogDatabases.streamKey(streamID, version: max(version, 1)))
            while let current = entry, positions.count < limit, current.key.count == prefix.count + 8, current.key.starts(with: prefix) {
                guard current.value.count == 8 else {
                    throw EventLogError.notAnEventLog(
                        path: path, reason: "a streams entry of \"\(streamID)\" has a \(current.value.count)-byte value")
                }
                positions.append(BigEndian.uint64(current.value))
                entry = try cursor.next()
            }
            return positions
        }
        if positions.count < limit {
            // The newest events may be in the unindexed tail.
            let from = max(version, 1)
            try tail.withSnapshot(txn) { state, head in
                for entry in state.entries(of: streamID, from: from, upTo: head) where positions.count < limit {
                    positions.append(entry.position)
                }
            }
        }
        return try positions.map { position in
            try BigEndian.bytes(position).withUnsafeBytes { key in
                guard let value = try txn.get(databases.records, key: key) else {
                    throw EventLogError.corruptRecord(
                        position: position, reason: "the stream index of \"\(streamID)\" points to a missing record", path: path)
                }
                return try RecordFormat.decode(value, position: position, path: path)
            }
        }
    }

    /// The position of the event with this id, or nil.
    ///
    /// - Parameter eventID: the id the event was appended with.
    /// - Returns: the event's position, or nil when no event has that id.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func position(ofEvent eventID: UUID) throws -> UInt64? {
        try reading { txn in
            if let position = try tail.withSnapshot(txn, { state, head in state.position(of: eventID, upTo: head) }) { return position }
            return try txn.get(databases.eventIDs, key: LogDatabases.eventIDKey(eventID)).flatMap { bytes in
                bytes.count == 8 ? bytes.withUnsafeBytes { BigEndian.uint64($0) } : nil
            }
        }
    }

    /// Calls `body` for every record from `position` on, reading `batchSize` records per short read
    /// transaction so that a long replay never pins old pages. Return false from `body` to stop.
    ///
    /// - Parameters:
    ///   - position: the first position to hand out (1 is the first record).
    ///   - batchSize: the records read per read transaction.
    ///   - body: called with each record in order; it returns false to stop.
    /// - Throws: `body`'s error, or what ``read(from:direction:limit:)`` throws.
    public func replay(from position: UInt64 = 1, batchSize: Int = 1_024, _ body: (RecordedEvent) throws -> Bool) throws {
        var next = max(position, 1)
        while true {
            let batch = try read(from: next, limit: max(batchSize, 1))
            guard let last = batch.last else { return }
            for record in batch where try !body(record) { return }
            next = last.position + 1
        }
    }

    /// Counts and sizes.
    ///
    /// - Returns: the number of records, the last position, the file's size and the map size.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func statistics() throws -> LogStatistics {
        do {
            let records = try environment.statistics(of: databases.records)
            return LogStatistics(
                records: records.entries, lastPosition: try lastPosition(),
                fileBytes: environment.fileSize, mapBytes: environment.mapSize)
        } catch {
            throw EventLogError.wrapping(error, path: path)
        }
    }

    /// Returns once the log holds a record after `position` (appended by this process or, noticed
    /// within the poll interval, by another), or the log closes, or the task is cancelled.
    ///
    /// - Parameter position: the position the caller has already seen.
    public func waitForCommit(beyond position: UInt64) async {
        await notifier.wait(beyond: position)
    }

    /// Flushes relaxed-mode commits to disk.
    ///
    /// - Throws: `EventLogError.closed` after `close()`, `.diskFull` or `.storage` when the
    ///   flush fails.
    public func sync() throws {
        do { try environment.sync() } catch { throw EventLogError.wrapping(error, path: path) }
    }
}
