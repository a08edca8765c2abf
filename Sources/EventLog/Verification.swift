//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import BlockingPool
internal import CChecksum
import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat
import Synchronization

extension EventLog {
    /// Checks every record's checksum, the hash chain, gap-free positions and both indexes (the
    /// records of the unindexed tail against the tail's stream versions), reading `batchSize`
    /// records per short read transaction (constant memory). Stops at the first problem and
    /// reports its position.
    ///
    /// The indexes are compared with the records as two sets, through a keyed-hash digest of each
    /// side: a thread of its own reads the `streams` and `event-ids` databases in key order while
    /// this one reads the records in position order, so no record costs a B-tree lookup. Only
    /// when the digests differ are the entries looked up one by one, to name the first record
    /// whose entry is wrong or missing.
    ///
    /// This blocks the calling thread until done (about a second per million records here);
    /// from async code, call ``verify(batchSize:progress:)``, which runs it on a thread of its own.
    ///
    /// - Parameters:
    ///   - batchSize: the records checked per read transaction.
    ///   - progress: called after each batch with the records checked so far, or nil.
    /// - Returns: how far the check got, the chain hash of the last intact record, and the first
    ///   problem found (nil when the log is intact).
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when a read fails;
    ///   damage is reported in the returned report, not thrown.
    public func verifyBlocking(
        batchSize: Int = 4_096, progress: (@Sendable (VerificationProgress) -> Void)? = nil
    ) throws
        -> VerificationReport
    {
        let (total, bound) = try reading { txn in
            let head = try databases.lastPosition(txn)
            return (head, try databases.indexedThrough(txn, head: head, path: path))
        }
        let indexPass = IndexPass(log: self, bound: bound, batchSize: batchSize)
        defer { indexPass.finish() }
        var implied = IndexDigests()
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
                        // As in `scan`: the next record's bytes are requested while this one is checked.
                        entry = try cursor.next()
                        if let ahead = entry { cchecksum_prefetch(ahead.value.baseAddress, ahead.value.count) }
                        switch checkRecord(current, expected: expected, previous: &previous) {
                        case .failed(let found):
                            problem = found
                        case .passed(let record) where record.position <= bound:
                            implied.add(record)
                        case .passed(let record) where record.position <= indexed:
                            // Indexed after verification began: looked up, as it is not in the digests.
                            problem = checkIndexEntries(of: record, txn: txn)
                        case .passed:
                            break
                        }
                        if problem != nil { return count }
                        count += 1
                        expected += 1
                    }
                    return count
                }
            }
            progress?(VerificationProgress(checked: expected - 1, total: max(total, expected - 1)))
            if checkedInBatch == 0 { break }
        }
        if problem != nil { indexPass.stop() }
        let stored = try indexPass.wait()
        if problem == nil, expected - 1 < bound {
            problem = IntegrityProblem(
                position: expected, kind: .positionGap,
                detail: "the log ends at position \(expected - 1), but it was indexed through \(bound) when verification began")
        }
        if problem == nil {
            switch stored {
            case .failed(let found): problem = found
            case .passed(let digests) where digests != implied: problem = try locateIndexProblem(bound: bound, batchSize: batchSize)
            case .passed: break
            }
        }
        if problem == nil { problem = try checkIndexCountsAndTail() }
        return VerificationReport(recordsChecked: expected - 1, lastPosition: expected - 1, headHash: previous, problem: problem)
    }

    /// ``verifyBlocking(batchSize:progress:)`` on a thread of its own: a long verification never
    /// holds a thread of Swift's cooperative pool.
    ///
    /// - Parameters:
    ///   - batchSize: the records checked per read transaction.
    ///   - progress: called after each batch with the records checked so far, or nil.
    /// - Returns: how far the check got, the chain hash of the last intact record, and the first
    ///   problem found (nil when the log is intact).
    /// - Throws: what ``verifyBlocking(batchSize:progress:)`` throws.
    public func verify(
        batchSize: Int = 4_096, progress: (@Sendable (VerificationProgress) -> Void)? = nil
    ) async throws
        -> VerificationReport
    {
        try await Self.verificationPool.run { [self] in try verifyBlocking(batchSize: batchSize, progress: progress) }
    }

    /// The threads that verifications run on (two at a time; more wait their turn).
    private static let verificationPool = BlockingPool(threads: 2, name: "log verify")

    /// The record's key, checksum, layout and chain hash.
    private func checkRecord(
        _ entry: Cursor.Entry, expected: UInt64, previous: inout ChainHash
    ) -> Checked<RecordView> {
        guard entry.key.count == 8 else {
            return .failed(IntegrityProblem(position: expected, kind: .corruptRecord, detail: "a records key has \(entry.key.count) bytes, not 8"))
        }
        let position = BigEndian.uint64(entry.key)
        guard position == expected else {
            return .failed(
                IntegrityProblem(position: expected, kind: .positionGap, detail: "position \(expected) is missing; the next record is at \(position)")
            )
        }
        let record: RecordView
        do {
            record = try RecordView(entry.value, position: position, path: path)
        } catch {
            return .failed(IntegrityProblem(position: position, kind: .corruptRecord, detail: error.description))
        }
        let body = UnsafeRawBufferPointer(rebasing: entry.value[RecordFormat.bodyOffset...])
        let computed = RecordFormat.chainHash(previous: previous, body: body)
        guard computed == record.hash else {
            return .failed(
                IntegrityProblem(
                    position: position, kind: .hashMismatch,
                    detail: "the chain hash is \(record.hash) but SHA-256 of the previous hash and this record is \(computed)"))
        }
        previous = computed
        return .passed(record)
    }

    /// Looks up the record's two index entries.
    func checkIndexEntries(of record: RecordView, txn: Transaction) -> IntegrityProblem? {
        let position = record.position
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

    /// In one read transaction: as many entries in each index as indexed records, and the records
    /// of the unindexed tail continuing their streams' indexed versions.
    private func checkIndexCountsAndTail() throws -> IntegrityProblem? {
        try reading { txn in
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
}

/// The digests of both indexes, read on a thread of its own while the records are checked.
private final class IndexPass: Sendable {
    private let outcome = Mutex<Result<Checked<IndexDigests>, any Error>?>(nil)
    private let stopped = Atomic<Bool>(false)
    private let waited = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(log: EventLog, bound: UInt64, batchSize: Int) {
        let thread = Thread { [self] in
            BlockingPool.nameKernelThread("log digest")
            let result = Result { () throws -> Checked<IndexDigests> in
                var digests = IndexDigests()
                for isStreams in [true, false] {
                    let database = isStreams ? log.databases.streams : log.databases.eventIDs
                    switch try log.indexDigest(database, isStreams: isStreams, bound: bound, batchSize: batchSize, stop: stopped) {
                    case .failed(let problem): return .failed(problem)
                    case .passed(let digest): if isStreams { digests.streams = digest } else { digests.eventIDs = digest }
                    }
                }
                return .passed(digests)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.start()
    }

    /// Asks the thread to end after its current batch (its result is then not used).
    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Stops the thread and waits for it, unless ``wait()`` already did: a verification that
    /// throws leaves no thread reading the log behind it.
    func finish() {
        stop()
        if !waited.exchange(true, ordering: .relaxed) { done.wait() }
    }

    /// The digests, once the thread is done.
    func wait() throws -> Checked<IndexDigests> {
        if !waited.exchange(true, ordering: .relaxed) { done.wait() }
        return try outcome.withLock { $0! }.get()
    }
}
