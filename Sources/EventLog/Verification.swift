//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
internal import LMDB
import LogRecordFormat

extension EventLog {
    /// Checks every record's checksum, the hash chain, gap-free positions and both indexes, reading
    /// `batchSize` records per short read transaction (constant memory). Stops at the first problem
    /// and reports its position.
    public func verify(batchSize: Int = 4_096, progress: (@Sendable (VerificationProgress) -> Void)? = nil) throws -> VerificationReport {
        let total = try lastPosition()
        var expected: UInt64 = 1
        var previous = ChainHash.genesis
        var problem: IntegrityProblem?
        while problem == nil {
            let checkedInBatch: Int = try reading { txn in
                try txn.withCursor(databases.records) { cursor in
                    var count = 0
                    var entry = try cursor.seek(atOrAfter: BigEndian.bytes(expected))
                    while let current = entry, count < max(batchSize, 1) {
                        if let found = check(current, expected: expected, previous: &previous, txn: txn) {
                            problem = found
                            return count
                        }
                        count += 1
                        expected += 1
                        entry = try cursor.next()
                    }
                    return count
                }
            }
            progress?(VerificationProgress(checked: expected - 1, total: max(total, expected - 1)))
            if checkedInBatch == 0 { break }
        }
        if problem == nil {
            let indexed = try reading { txn in
                (streams: try txn.entryCount(databases.streams), ids: try txn.entryCount(databases.eventIDs))
            }
            let records = Int(expected - 1)
            if indexed.streams != records || indexed.ids != records {
                problem = IntegrityProblem(
                    position: expected - 1, kind: .indexMismatch,
                    detail: "\(records) records but \(indexed.streams) stream index entries and \(indexed.ids) event-id entries")
            }
        }
        return VerificationReport(recordsChecked: expected - 1, lastPosition: expected - 1, headHash: previous, problem: problem)
    }

    private func check(_ entry: Cursor.Entry, expected: UInt64, previous: inout ChainHash, txn: Transaction) -> IntegrityProblem? {
        guard entry.key.count == 8 else {
            return IntegrityProblem(position: expected, kind: .corruptRecord, detail: "a records key has \(entry.key.count) bytes, not 8")
        }
        let position = BigEndian.uint64(entry.key)
        guard position == expected else {
            return IntegrityProblem(
                position: expected, kind: .positionGap, detail: "position \(expected) is missing; the next record is at \(position)")
        }
        let record: RecordView
        do {
            record = try RecordView(entry.value, position: position, path: path)
        } catch {
            return IntegrityProblem(position: position, kind: .corruptRecord, detail: error.description)
        }
        let body = UnsafeRawBufferPointer(rebasing: entry.value[RecordFormat.bodyOffset...])
        let computed = RecordFormat.chainHash(previous: previous, body: body)
        guard computed == record.hash else {
            return IntegrityProblem(
                position: position, kind: .hashMismatch,
                detail: "the chain hash is \(record.hash) but SHA-256 of the previous hash and this record is \(computed)")
        }
        previous = computed
        do {
            let streamEntry = try txn.get(databases.streams, key: LogDatabases.streamKey(record.streamID, version: record.streamVersion))
            guard streamEntry == BigEndian.bytes(position) else {
                return IntegrityProblem(
                    position: position, kind: .indexMismatch,
                    detail: "the stream index has no entry for \"\(record.streamID)\" version \(record.streamVersion) pointing here")
            }
            let idEntry = try txn.get(databases.eventIDs, key: LogDatabases.eventIDKey(record.eventID))
            guard idEntry == BigEndian.bytes(position) else {
                return IntegrityProblem(
                    position: position, kind: .indexMismatch,
                    detail: "the event-id index has no entry for \(record.eventID.uuidString) pointing here")
            }
        } catch {
            return IntegrityProblem(position: position, kind: .indexMismatch, detail: "reading the indexes failed: \(error)")
        }
        return nil
    }
}
