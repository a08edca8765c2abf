//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension EventLog {
    /// A catch-up subscription: every record after `position` (of one stream, or of the whole log),
    /// first the historical ones, then live ones as they commit, with no gap and no duplicate at the
    /// switch-over (both come from the same ordered reads). Records are pulled in batches of
    /// `batchSize`, each in a short read transaction, only as fast as the consumer asks, so a slow
    /// consumer never makes memory grow. Cancelling the consuming task, or closing the log, ends it.
    ///
    /// - Parameters:
    ///   - position: deliver records with positions greater than this (0: from the start).
    ///   - streamID: only this stream's records; `position` still counts global positions.
    ///   - batchSize: how many records one read transaction fetches (at least 1).
    /// - Returns: the records, as an asynchronous sequence that throws when a read fails.
    public func subscribe(after position: UInt64 = 0, stream streamID: String? = nil, batchSize: Int = 256) -> EventSubscription {
        EventSubscription(batches: subscribeBatches(after: position, stream: streamID, batchSize: batchSize))
    }

    /// The same subscription a batch at a time (what projection runners consume).
    ///
    /// - Parameters:
    ///   - position: deliver records with positions greater than this (0: from the start).
    ///   - streamID: only this stream's records, or nil for the whole log.
    ///   - batchSize: the most records in one batch (at least 1).
    /// - Returns: the batches, as an asynchronous sequence that throws when a read fails.
    public func subscribeBatches(after position: UInt64, stream streamID: String?, batchSize: Int) -> RecordBatches {
        RecordBatches { [self] in
            let cursor = SubscriptionCursor(log: self, position: position, streamID: streamID, batchSize: max(1, batchSize))
            return { try await cursor.next() }
        }
    }

    /// Reads the next batch of a subscription and the log's last position seen by the same transaction.
    func subscriptionBatch(
        after position: UInt64, streamID: String?, streamVersion: UInt64, limit: Int
    ) throws
        -> (records: [RecordedEvent], lastPosition: UInt64, streamVersionRead: UInt64)
    {
        try reading { txn in
            let last = try databases.lastPosition(txn)
            guard last > position else { return ([], last, streamVersion) }
            if let streamID {
                let records = try readStream(streamID, from: streamVersion + 1, limit: limit, txn: txn)
                return (records.filter { $0.position > position }, last, records.last?.streamVersion ?? streamVersion)
            }
            return try txn.withCursor(databases.records) { cursor in
                var records: [RecordedEvent] = []
                records.reserveCapacity(min(limit, Int(last - position)))
                var entry = try cursor.seek(atOrAfter: BigEndian.bytes(position + 1))
                while let current = entry, records.count < limit {
                    let at = BigEndian.uint64(current.key)
                    records.append(try RecordFormat.decode(current.value, position: at, path: path))
                    entry = try cursor.next()
                }
                return (records, last, streamVersion)
            }
        }
    }
}

/// Where one subscription iterator stands. Each iterator owns its cursor and calls it from one
/// task at a time, which is what `AsyncIteratorProtocol` promises.
// Unchecked Sendable: one iterator owns it and calls it from one task at a time.
final class SubscriptionCursor: @unchecked Sendable {
    let log: EventLog
    /// The position of the last record delivered (or the starting point).
    var position: UInt64
    let streamID: String?
    /// For stream subscriptions: the stream version of the last record delivered.
    var streamVersion: UInt64 = 0
    let batchSize: Int

    init(log: EventLog, position: UInt64, streamID: String?, batchSize: Int) {
        self.log = log
        self.position = position
        self.streamID = streamID
        self.batchSize = batchSize
    }

    /// The next non-empty batch, waiting for commits when caught up; nil once the log is closed.
    func next() async throws -> [RecordedEvent]? {
        while true {
            if Task.isCancelled || log.notifier.isClosed { return nil }
            let batch: (records: [RecordedEvent], lastPosition: UInt64, streamVersionRead: UInt64)
            do {
                batch = try log.subscriptionBatch(after: position, streamID: streamID, streamVersion: streamVersion, limit: batchSize)
            } catch EventLogError.closed {
                return nil
            }
            if let last = batch.records.last {
                position = last.position
                streamVersion = last.streamVersion
                return batch.records
            }
            if batch.streamVersionRead > streamVersion {
                // Stream events at or before the starting position: skip them and read on.
                streamVersion = batch.streamVersionRead
                continue
            }
            // Caught up with everything this read saw: wait for a later commit.
            await log.notifier.wait(beyond: Swift.max(batch.lastPosition, position))
        }
    }
}
