//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
internal import LMDB
import LogRecordFormat

extension EventLog {
    /// Checks every record's checksum, the hash chain, gap-free positions and both indexes (the
    /// records of the unindexed tail against the tail's stream versions), reading `batchSize`
    /// records per short read transaction (constant memory). Stops at the first problem and
    /// reports its position.
    public func verify(batchSize: Int = 4_096, progress: (@Sendable (VerificationProgress) -> Void)? = nil) throws -> VerificationReport {
        let total = try lastPosition()
        var expected: UInt64 = 1
        var previous = ChainHash.genesis
        var problem: IntegrityProblem?
        while problem == nil {
            let checkedInBatch: Int = try reading { txn in
                let indexed = try databases.indexedThrough(txn, head: try databases.lastPosition(txn), path: path)
                return try txn.withCursor(databases.records) { cursor in
                    var count = 0
                    var entry = try cursor.seek(atOrAfter: BigEndian.bytes(expected))
                    while let current = entry, count < max(batchSize, 1) {
                        if let found = check(current, expected: expected, previous: &previous, indexed: indexed, txn: txn) {
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
            problem = try reading { txn in
                let head = try databases.lastPosition(txn)
                let through = try databases.indexedThrough(txn, head: head, path: path)
                let streams = try txn.entryCount(databases.streams)
                let ids = try txn.entryCount(databases.eventIDs)
                if streams != Int(through) || ids != Int(through) {
                    return IntegrityProblem(
                        position: through, kind: .indexMismatch,
                        detail: "\(through) indexed records but \(streams) stream index entries and \(ids) event-id entries")
                }
                do {
                    // The tail: rebuilt from the records, which checks their stream versions.
                    var state = TailState(base: through)
                    try state.scan(txn, records: databases.records, upTo: head, path: path)
                    for (stream, first) in state.firstEntries.sorted(by: { $0.value.position < $1.value.position }) {
                        let indexedVersion = try LogDatabases.streamVersion(stream, in: txn, streams: databases.streams)
                        if first.version != indexedVersion + 1 {
                            return IntegrityProblem(
                                position: first.position, kind: .indexMismatch,
                                detail: "\"\(stream)\" version \(first.version) follows its indexed version \(indexedVersion)")
                        }
                    }
                } catch {
                    return IntegrityProblem(position: through + 1, kind: .indexMismatch, detail: "the unindexed tail: \(error)")
                }
                return nil
            }
        }
        return VerificationReport(recordsChecked: expected - 1, lastPosition: expected - 1, headHash: previous, problem: problem)
    }

    private func check(
        _ entry: Cursor.Entry, expected: UInt64, previous: inout ChainHash, indexed: UInt64, txn: Transaction
    ) -> IntegrityProblem? {
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
        guard position <= indexed else { return nil }
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
