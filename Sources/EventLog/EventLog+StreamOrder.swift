//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

internal import CChecksum
import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension EventLog: StreamOrderedScanning {
    /// The last position whose records are all in the streams index: a stream-ordered scan
    /// through it sees every record up to it.
    ///
    /// - Returns: the last position the `streams` index covers.
    /// - Throws: `EventLogError.closed` after `close()`, `.notAnEventLog` for a damaged
    ///   `meta` entry, or `.storage` when the read fails.
    public func streamOrderLimit() throws -> UInt64 {
        try reading { txn in
            let head = try databases.lastPosition(txn)
            return try databases.indexedThrough(txn, head: head, path: path)
        }
    }

    /// Calls `body` with the records at positions up to `through`, stream by stream in the
    /// order of their ids' bytes (each stream's records in version order), starting with the
    /// first stream after `streamAfter`, checked but not copied. `body` returns false to stop
    /// before the record it was given.
    ///
    /// It walks the streams index and looks each record up by position: each stream's records
    /// are read together, wherever they lie in the log. `through` must not exceed
    /// ``streamOrderLimit()``, else records past the index are missed.
    ///
    /// - Parameters:
    ///   - streamAfter: the id bytes of the last stream already read, or nil to start with the first.
    ///   - through: the last position to include, at most ``streamOrderLimit()``.
    ///   - batchSize: about how many records one read transaction hands out (it ends between streams).
    ///   - body: called with each record; it returns false to stop. The view is valid only during the
    ///     call.
    /// - Throws: `body`'s error, `EventLogError.corruptRecord` when a record fails its checks or the
    ///   index points to a missing one, `.closed` after `close()`, or `.storage` when the read
    ///   fails.
    public func scanStreams(
        after streamAfter: [UInt8]?, through: UInt64, batchSize: Int = 4_096, _ body: (RecordView) throws -> Bool
    ) throws {
        // The first key past every entry of `streamAfter` (its bytes, then 0x01).
        var next: [UInt8] = streamAfter.map { $0 + [1] } ?? []
        while true {
            let (resume, done): ([UInt8]?, Bool) = try reading { txn in
                try txn.withCursor(databases.streams) { streams in
                    try txn.withCursor(databases.records) { records in
                        var count = 0
                        var entry = next.isEmpty ? try streams.first() : try streams.seek(atOrAfter: next)
                        while let current = entry {
                            guard current.value.count == 8 else {
                                throw EventLogError.corruptRecord(
                                    position: 0, reason: "a streams index entry has a value of \(current.value.count) bytes", path: path)
                            }
                            let position = BigEndian.uint64(current.value)
                            if position <= through {
                                // The entry holds the record's key as stored (big-endian), used in
                                // place. A cursor, not a lookup: LMDB first tries the cursor's
                                // current page, where an account's next record usually is (a fresh
                                // lookup per record descended the tree each time: 5 % more of a
                                // rebuild's instructions).
                                guard let found = try records.seek(atOrAfter: current.value), BigEndian.uint64(found.key) == position else {
                                    throw EventLogError.corruptRecord(
                                        position: position, reason: "the streams index points at a missing record", path: path)
                                }
                                if try !body(try RecordView(found.value, position: position, path: path)) { return (nil, true) }
                                count += 1
                            }
                            entry = try streams.next()
                            // Between two streams, after a batch: a fresh read transaction.
                            if count >= batchSize, let following = entry, !sameStream(current.key, following.key) {
                                return (Array(following.key), false)
                            }
                        }
                        return (nil, true)
                    }
                }
            }
            if done { return }
            next = resume ?? []
        }
    }

    /// The id of the stream that holds the `records`-th record of a stream-ordered scan after
    /// `streamAfter` (up to `through`), or nil when the scan holds fewer. It walks the streams
    /// index only, reading no record.
    ///
    /// - Parameters:
    ///   - streamAfter: the id bytes of the last stream already read, or nil to start with the first.
    ///   - records: about how many records the first part should hold.
    ///   - through: the last position the scan includes.
    /// - Returns: the id bytes of the stream that ends the first part, or nil when the scan holds fewer
    ///   than `records` records.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func streamSplit(after streamAfter: [UInt8]?, records: Int, through: UInt64) throws -> [UInt8]? {
        guard records > 0 else { return nil }
        let start: [UInt8] = streamAfter.map { $0 + [1] } ?? []
        return try reading { txn in
            try txn.withCursor(databases.streams) { streams in
                var count = 0
                var entry = start.isEmpty ? try streams.first() : try streams.seek(atOrAfter: start)
                while let current = entry {
                    if current.value.count == 8, BigEndian.uint64(current.value) <= through {
                        count += 1
                        // The key is the stream id, a 0 byte and the version (8 bytes).
                        if count == records, current.key.count >= 9 { return Array(current.key.prefix(current.key.count - 9)) }
                    }
                    entry = try streams.next()
                }
                return nil
            }
        }
    }

    /// Whether two streams index keys (stream id, 0, version) belong to one stream.
    private func sameStream(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        lhs.count == rhs.count && lhs.count >= 9 && memcmp(lhs.baseAddress!, rhs.baseAddress!, lhs.count - 8) == 0
    }
}
