//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LogRecordFormat
import PostgresNIO

/// The columns of a record, read in one order, turned into `RecordedEvent`s.
enum RecordColumns {
    static let list = "position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash"

    typealias Row = (Int64, String, Int64, Int64, UUID, String, Int32, ByteBuffer, ByteBuffer, Int32, ByteBuffer)
    static func decode(_ rows: PostgresRowSequence, location: String) async throws -> [RecordedEvent] {
        var records: [RecordedEvent] = []
        for try await row in rows {
            records.append(try record(columns(row), location: location).event)
        }
        return records
    }

    /// The record's columns of a row, from its column `first` on. Cell by cell: decoding the row
    /// as one tuple of eleven types builds that tuple's type at run time for every row.
    static func columns(_ row: PostgresRow, from first: Int = 0) throws -> Row {
        var cells = row.makeIterator()
        for _ in 0..<first { _ = cells.next() }
        func next() throws -> PostgresCell {
            guard let cell = cells.next() else { throw PostgresLogError.server("a record row has too few columns") }
            return cell
        }
        return (
            try next().decode(Int64.self), try next().decode(String.self), try next().decode(Int64.self), try next().decode(Int64.self),
            try next().decode(UUID.self), try next().decode(String.self), try next().decode(Int32.self), try next().decode(ByteBuffer.self),
            try next().decode(ByteBuffer.self), try next().decode(Int32.self), try next().decode(ByteBuffer.self)
        )
    }

    /// The record, and its stored CRC and metadata bytes (for verification).
    static func record(_ row: Row, location: String) throws -> (event: RecordedEvent, crc: UInt32, pairs: [(String, String)]) {
        let (position, streamID, version, timestamp, eventID, type, schemaVersion, metadataBytes, payload, crc, hash) = row
        guard let pairs = metadataBytes.withUnsafeReadableBytes({ RecordFormat.decodeMetadata($0) }), hash.readableBytes == 32 else {
            throw EventLogError.corruptRecord(position: UInt64(position), reason: "its metadata or hash column is malformed", path: location)
        }
        let event = RecordedEvent(
            position: UInt64(position), streamID: streamID, streamVersion: UInt64(version), eventID: eventID, type: type,
            schemaVersion: UInt32(bitPattern: schemaVersion), timestamp: Date(timeIntervalSince1970: Double(timestamp) / 1_000_000),
            metadata: EventMetadata(pairs: pairs), payload: Data(buffer: payload), hash: hash.withUnsafeReadableBytes { ChainHash($0) })
        return (event, UInt32(bitPattern: crc), pairs)
    }
}

/// A subscription's reader: batches by position, then waits for commits (notifications, polling).
///
/// While it catches up it reads ahead: after handing out a full batch it starts reading the next
/// one, so that the server's query, the rows' transfer and their decoding overlap with the
/// consumer's work on the batch it has (`hot-paths pg-replay` on two cores, alternating builds:
/// 165–195 k → 180–235 k records/s). A subscription to the whole log reads two batches ahead, on
/// two connections: positions have no gaps, so the batch after next starts `batchSize` positions
/// after the next one. A batch read ahead is used only if it is full and starts right after the
/// last record delivered; otherwise the reads ahead are dropped and the batch is read afresh. Once
/// a batch comes back short the subscription has caught up and reads only when asked.
// Unchecked Sendable: one iterator owns it and calls it from one task at a time.
final class PostgresSubscriptionCursor: @unchecked Sendable {
    let log: PostgresEventLog
    /// The position of the last record delivered (or the starting point). Used by one iterator.
    var position: UInt64
    let streamID: String?
    let batchSize: Int
    /// The reads of the batches after `position`, oldest first, started when the last batch was full.
    private var ahead: [Task<(UInt64, [RecordedEvent]), any Error>] = []
    /// How many batches are read ahead: two for the whole log, one for a stream (whose positions
    /// have gaps, so where the batch after next starts is not known).
    private var depth: Int { streamID == nil ? 2 : 1 }

    /// The server cannot be reached (logged once per outage, with its duration when it ends).
    private let outage: PostgresOutage

    init(log: PostgresEventLog, position: UInt64, streamID: String?, batchSize: Int) {
        self.log = log
        self.position = position
        self.streamID = streamID
        self.batchSize = batchSize
        outage = PostgresOutage(
            "a subscription to the log at \(log.location)" + (streamID.map { " (stream \($0))" } ?? ""), logger: log.logger,
            server: log.readServer)
    }

    deinit {
        for task in ahead { task.cancel() }
    }

    private func dropAhead() {
        for task in ahead { task.cancel() }
        ahead = []
    }

    /// The batch after `position`: the oldest read ahead, if there is one and it can be used
    /// (see the type's description), else a new read.
    private func read() async throws -> (UInt64, [RecordedEvent]) {
        if !ahead.isEmpty {
            let pending = ahead.removeFirst()
            let result = try await withTaskCancellationHandler {
                try await pending.value
            } onCancel: {
                pending.cancel()
            }
            if depth == 1 { return result }
            if result.1.count >= batchSize, result.1.first?.position == position + 1 { return result }
            dropAhead()
        }
        return try await log.batch(after: position, streamID: streamID, limit: batchSize)
    }

    /// Starts reads so that `depth` batches after the full batch just delivered are under way.
    private func readAhead(after last: UInt64) {
        var after = last + UInt64(ahead.count * batchSize)
        while ahead.count < depth {
            ahead.append(
                Task { [log, streamID, batchSize, after] in
                    try await log.batch(after: after, streamID: streamID, limit: batchSize)
                })
            after += UInt64(batchSize)
        }
    }

    /// The next non-empty batch; nil once the log is closed or the task cancelled. While the
    /// server cannot be reached the subscription waits and tries again, with capped exponential
    /// backoff and jitter (logging the outage once when it begins and once, with its duration,
    /// when it reads again), and goes on from the last record it delivered: no gap, no repeat.
    func next() async throws -> [RecordedEvent]? {
        while true {
            if Task.isCancelled || log.notifier.isClosed {
                dropAhead()
                return nil
            }
            let head: UInt64
            let records: [RecordedEvent]
            do {
                (head, records) = try await read()
            } catch EventLogError.closed {
                return nil
            } catch let error as EventLogError {
                // The consumer went away while a batch was being read: the subscription ends.
                if Task.isCancelled { return nil }
                guard case .storage = error else { throw error }
                outage.failed(error)
                try? await Task.sleep(
                    for: PostgresTransience.backoff(attempt: outage.failures, first: .milliseconds(50), cap: log.options.pollInterval * 4))
                continue
            } catch {
                if Task.isCancelled { return nil }
                throw error
            }
            // A batch read ahead may have been read before an outage: no word on the server now.
            outage.succeeded(tryStarted: nil)
            if let last = records.last {
                position = last.position
                if records.count >= batchSize { readAhead(after: last.position) } else { dropAhead() }
                return records
            }
            await log.notifier.wait(beyond: Swift.max(head, position))
        }
    }
}

extension PostgresEventLog {
    /// Records after `position` (of one stream, or all) and the head position, from one snapshot:
    /// one statement (which sees one snapshot), its first column the head, repeated on every row,
    /// and one row of nulls beside the head when no record follows.
    func batch(after position: UInt64, streamID: String?, limit: Int) async throws -> (UInt64, [RecordedEvent]) {
        let after = Int64(clamping: position)
        let limit = Int64(limit)
        let location = location
        return try await query("read a subscription's batch", fromStandby: true) { connection, logger in
            let rows =
                if let streamID {
                    try await connection.query(
                        """
                        SELECT h.position, r.* FROM log_head h LEFT JOIN LATERAL (
                            SELECT \(unescaped: RecordColumns.list) FROM log_records WHERE stream_id = \(streamID) AND position > \(after)
                            ORDER BY position LIMIT \(limit)) r ON true
                        """, logger: logger)
                } else {
                    try await connection.query(
                        """
                        SELECT h.position, r.* FROM log_head h LEFT JOIN LATERAL (
                            SELECT \(unescaped: RecordColumns.list) FROM log_records WHERE position > \(after) ORDER BY position LIMIT \(limit)) r ON true
                        """, logger: logger)
                }
            var head: UInt64 = 0
            var records: [RecordedEvent] = []
            records.reserveCapacity(Int(limit))
            for try await row in rows {
                var cells = row.makeIterator()
                guard let first = cells.next() else { throw PostgresLogError.server("a batch row has no columns") }
                head = UInt64(try first.decode(Int64.self))
                // The row of nulls: no record follows `after`.
                guard let next = cells.next(), next.bytes != nil else { continue }
                records.append(try RecordColumns.record(RecordColumns.columns(row, from: 1), location: location).event)
            }
            return (head, records)
        }
    }

    /// Checks every record in batches: its CRC and chain hash recomputed from its columns, the
    /// chain from the previous record, gap-free positions; then that the head and the counts agree.
    public func verify(batchSize: Int, progress: (@Sendable (VerificationProgress) -> Void)?) async throws -> VerificationReport {
        let total = try await lastPosition()
        var previous = ChainHash.genesis
        var sealer = RecordSealer()
        var checked: UInt64 = 0
        var expected: UInt64 = 1
        func report(_ problem: IntegrityProblem?) -> VerificationReport {
            VerificationReport(recordsChecked: checked, lastPosition: expected - 1, headHash: previous, problem: problem)
        }
        let limit = Int64(max(1, batchSize))
        let location = location
        while true {
            let after = Int64(expected - 1)
            let rows: [RecordColumns.Row] = try await query("verify") { connection, logger in
                var rows: [RecordColumns.Row] = []
                let sequence = try await connection.query(
                    "SELECT \(unescaped: RecordColumns.list) FROM log_records WHERE position > \(after) ORDER BY position LIMIT \(limit)",
                    logger: logger)
                for try await row in sequence { rows.append(try RecordColumns.columns(row)) }
                return rows
            }
            if rows.isEmpty { break }
            for row in rows {
                let position = UInt64(row.0)
                guard position == expected else {
                    return report(
                        IntegrityProblem(position: expected, kind: .positionGap, detail: "position \(expected) is missing (next: \(position))"))
                }
                let decoded: (event: RecordedEvent, crc: UInt32, pairs: [(String, String)])
                do {
                    decoded = try RecordColumns.record(row, location: location)
                } catch {
                    return report(IntegrityProblem(position: position, kind: .corruptRecord, detail: "\(error)"))
                }
                let event = decoded.event
                let proposed = ProposedEvent(
                    eventID: event.eventID, type: event.type, schemaVersion: event.schemaVersion, metadata: event.metadata, payload: event.payload)
                let size: Int
                do {
                    size = try RecordFormat.encodedSize(streamID: event.streamID, event: proposed, pairs: decoded.pairs, maxPayload: .max)
                } catch {
                    return report(IntegrityProblem(position: position, kind: .corruptRecord, detail: "\(error)"))
                }
                let encoded = sealer.seal(
                    position: position, streamVersion: event.streamVersion, timestampMicros: row.3, streamID: event.streamID, event: proposed,
                    pairs: decoded.pairs, size: size, previous: previous)
                guard encoded.hash == event.hash else {
                    return report(
                        IntegrityProblem(position: position, kind: .hashMismatch, detail: "the chain hash does not match the record's columns"))
                }
                guard encoded.crc == decoded.crc else {
                    return report(IntegrityProblem(position: position, kind: .corruptRecord, detail: "checksum mismatch"))
                }
                previous = encoded.hash
                checked += 1
                expected += 1
            }
            progress?(VerificationProgress(checked: checked, total: total))
        }
        let counts: (Int64, Int64, ByteBuffer, Int64) = try await query("verify the head") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT (SELECT count(*) FROM log_records), position, hash,
                    (SELECT count(*) FROM log_claims c WHERE NOT EXISTS (SELECT 1 FROM log_records r WHERE r.stream_id = c.stream_id))
                FROM log_head
                """, logger: logger)
            for try await row in rows.decode((Int64, Int64, ByteBuffer, Int64).self) { return row }
            throw PostgresLogError.server("the log's head row is missing")
        }
        let last = expected - 1
        if UInt64(counts.1) < last || UInt64(counts.0) != last {
            return report(
                IntegrityProblem(position: last, kind: .indexMismatch, detail: "the head says \(counts.1) and the table holds \(counts.0) records"))
        }
        if UInt64(counts.1) == last, counts.2.readableBytes != 32 || counts.2.withUnsafeReadableBytes({ ChainHash($0) }) != previous {
            return report(IntegrityProblem(position: last, kind: .hashMismatch, detail: "the head's hash differs from the last record's"))
        }
        if counts.3 > 0 {
            return report(IntegrityProblem(position: last, kind: .indexMismatch, detail: "\(counts.3) claims belong to streams without records"))
        }
        return report(nil)
    }
}
