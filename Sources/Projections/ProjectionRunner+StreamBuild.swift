//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import Synchronization

/// Where a rebuild applied stream by stream has come (`gen/<name>/<n>/stream-build`).
struct StreamBuildMarker {
    /// The last position the stream-ordered pass applies; the rest follows in log order.
    var through: UInt64
    /// Records applied so far (for progress).
    var applied: UInt64
    /// The id of the last stream applied completely; nil before the first.
    var lastStream: [UInt8]?

    var bytes: [UInt8] { BigEndian.bytes(through) + BigEndian.bytes(applied) + (lastStream ?? []) }

    init(through: UInt64, applied: UInt64, lastStream: [UInt8]?) {
        self.through = through
        self.applied = applied
        self.lastStream = lastStream
    }

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 16 else { return nil }
        through = bytes.withUnsafeBytes { BigEndian.uint64($0) }
        applied = bytes.withUnsafeBytes { BigEndian.uint64(UnsafeRawBufferPointer(rebasing: $0[8...])) }
        lastStream = bytes.count > 16 ? Array(bytes[16...]) : nil
    }
}

extension ProjectionStore {
    /// What one transaction of a stream-ordered rebuild did.
    enum StreamChunk {
        /// The generation is not (or no longer) built this way: apply records in log order.
        case inLogOrder
        /// Another process replaced the generation.
        case replaced
        case committed(BatchOutcome)
    }

    /// The projection failed inside a stream-ordered chunk: the chunk is rolled back.
    private struct ChunkFailed: Error {
        let failure: ProjectionError
    }

    /// Whether the serving generation of `name` is empty (checkpoint 0) while a generation is
    /// built beside it stream by stream: a first build, whose result takes over once built.
    func firstBuildsByStream(_ name: String) -> Bool {
        guard let projection = projections[name], projection.buildsStreamByStream, log is any StreamOrderedScanning else { return false }
        return state.withLock { state in
            guard let active = state.active[name], let building = state.building[name] else { return false }
            return active.checkpoint == 0 && building.checkpoint == 0
        }
    }

    /// One write transaction of a rebuild applied stream by stream.
    ///
    /// A rebuilt generation of a projection whose streams are independent
    /// (``Projection/buildsStreamByStream``) starts with a pass over the log in stream order, up to
    /// the last position the log's streams index covers: each stream's records are applied
    /// together, so its state is folded in memory and written once, and the states are written in
    /// key order (a pass in log order writes an account's state once per batch that touches it, in
    /// random order). Each transaction applies whole streams, about `batchSize` records, and
    /// stores where it stopped in the generation's marker; the next one (of this process or
    /// another) goes on from there. When the streams end, the generation's checkpoint becomes the
    /// pass's last position and the records after it follow in log order. The projection failing
    /// rolls back the chunk it failed in.
    ///
    /// A chunk of at least twice ``minimumLane`` records is read in two parts at once: up to the
    /// stream that holds its middle record on this thread, in the write transaction, and the
    /// streams after it on the lane thread (``startSecondLane``); this transaction then writes the
    /// first part's batch and the second's, in key order. On two cores this took a rebuild of 1 M
    /// events from 2.6–2.7 s to 1.7–1.9 s (`peer-compare --only rebuild`, alternating builds).
    ///
    /// With `givesWay`, a chunk also ends early, after 1,024 records, while a command waits for the
    /// serving generation (the second part is then dropped unless the first reached it); a first
    /// build does not (the serving generation is not advanced until the build takes over).
    func streamChunk<Log: StreamOrderedScanning, P: Projection>(
        _ projection: P, from log: Log, name: String, generation: Generation, batchSize: Int, givesWay: Bool
    ) throws -> StreamChunk {
        do {
            return try environment.write { txn -> StreamChunk in
                guard MetaKeys.u32(try txn.get(meta, key: MetaKeys.building(name))) == generation.number else { return .replaced }
                guard (MetaKeys.u64(try txn.get(meta, key: MetaKeys.checkpoint(name, generation.number))) ?? 0) == 0 else {
                    return .inLogOrder
                }
                let markerKey = MetaKeys.streamBuild(name, generation.number)
                let fingerprintKey = MetaKeys.fingerprint(name, generation.number)
                // Whether the second part was written: counted once the transaction has committed.
                var inTwoParts = false
                var marker: StreamBuildMarker
                if let stored = try txn.get(meta, key: markerKey) {
                    // Records in log order on top of a half-built generation would be applied twice.
                    guard let decoded = StreamBuildMarker(stored) else {
                        throw ChunkFailed(
                            failure: .failed(
                                projection: name, position: 1, reason: "its stream-by-stream build marker has \(stored.count) bytes; rebuild it"))
                    }
                    marker = decoded
                } else {
                    let through = try log.streamOrderLimit()
                    // A log shorter than a batch is applied in order, in one batch anyway.
                    guard through > UInt64(batchSize) else { return .inLogOrder }
                    marker = StreamBuildMarker(through: through, applied: 0, lastStream: nil)
                    try txn.put(meta, key: fingerprintKey, value: Array((projection.fingerprint + MetaKeys.streamBuildSuffix).utf8))
                }
                let projectionState = ProjectionState(transaction: txn, databases: generation.databases)
                var applier = BatchApplier(projection: projection, name: name, state: projectionState, reached: 0)
                // A chunk large enough is read in two parts at once, the second on the lane thread.
                let twoParts = batchSize >= 2 * Self.minimumLane && !state.withLock { $0.singlePart.contains(name) }
                let split = twoParts ? try log.streamSplit(after: marker.lastStream, records: batchSize / 2, through: marker.through) : nil
                let second = split.map { split in
                    startSecondLane(
                        projection, from: log, name: name, generation: generation, after: split, through: marker.through, batchSize: batchSize / 2,
                        givesWay: givesWay)
                }
                let first = Result {
                    try scanLane(
                        log, after: marker.lastStream, through: marker.through, until: split, batchSize: batchSize, givesWay: givesWay,
                        applier: &applier)
                }
                // Whatever happens next, the second part has ended: nothing of this chunk runs on
                // after its transaction (which may be retried, after a map resize, for example).
                let output = second?.wait()
                var lane = try first.get()
                if let storageFailure = applier.storageFailure { throw storageFailure }
                if let failure = applier.failure { throw ChunkFailed(failure: failure) }
                try applier.finish()
                var count = applier.count
                // The first part went all the way to the cut: the second follows on from it.
                // Otherwise (it gave way to a command first) the second part is dropped.
                if let output, let split, lane.ended || lane.finished == split {
                    switch output {
                    case let .failure(failed as ChunkFailed):
                        throw failed
                    case let .failure(error):
                        Self.logger.warning(
                            "the second part of a rebuild's chunk could not be read; the chunk ends where it began",
                            metadata: ["projection": "\(name)", "path": "\(environment.path)", "error": "\(error)"])
                        lane = Lane(ended: false, finished: split)
                    case var .success(other):
                        if other.refusedWrites > 0 {
                            // The projection writes in `apply`: this chunk ends at the cut, and
                            // its later chunks are read in one part.
                            Self.logger.notice(
                                "projection writes its state while applying records: its rebuild reads in one part",
                                metadata: ["projection": "\(name)", "path": "\(environment.path)"])
                            state.withLock { _ = $0.singlePart.insert(name) }
                            lane = Lane(ended: false, finished: split)
                        } else if let storageFailure = other.applier.storageFailure {
                            Self.logger.warning(
                                "the second part of a rebuild's chunk could not read its state; the chunk ends where it began",
                                metadata: ["projection": "\(name)", "path": "\(environment.path)", "error": "\(storageFailure)"])
                            lane = Lane(ended: false, finished: split)
                        } else if let failure = other.applier.failure {
                            throw ChunkFailed(failure: failure)
                        } else {
                            other.applier.state = projectionState
                            try other.applier.finish()
                            count += other.applier.count
                            lane = other.lane
                            inTwoParts = true
                        }
                    }
                }
                marker.applied += UInt64(count)
                if lane.ended {
                    _ = try txn.delete(meta, key: markerKey)
                    try txn.put(meta, key: fingerprintKey, value: Array(projection.fingerprint.utf8))
                    try txn.put(meta, key: MetaKeys.checkpoint(name, generation.number), value: BigEndian.bytes(marker.through))
                    return .committed(BatchOutcome(reached: marker.through, failure: nil, streamApplied: marker.applied, readInTwoParts: inTwoParts))
                }
                marker.lastStream = lane.finished
                try txn.put(meta, key: markerKey, value: marker.bytes)
                return .committed(BatchOutcome(reached: 0, failure: nil, streamApplied: marker.applied, readInTwoParts: inTwoParts))
            }
        } catch let failed as ChunkFailed {
            return .committed(BatchOutcome(reached: 0, failure: failed.failure))
        }
    }

    /// A chunk is read in two parts only when it may hold twice this many records (the cut is
    /// made after this many; a part may still hold fewer when the streams end).
    static var minimumLane: Int { 4_096 }

    /// How one part of a stream-ordered chunk ended.
    struct Lane {
        /// The streams ended (nothing is left up to the pass's last position).
        var ended: Bool
        /// The last stream applied completely: the stream the part started after (nil for the
        /// log's first stream) until it finishes one. Not kept up when the streams end: the
        /// pass is over then, and nothing reads it.
        var finished: [UInt8]?
    }

    /// What the second part of a chunk did, for the transaction's thread to write. Made on the
    /// lane thread and handed over once, through ``PendingLane``'s lock and semaphore; the lane
    /// thread keeps nothing of it. The projection's batch state crosses threads this way (it is
    /// not required to be `Sendable`, and only one thread holds it at a time); the applier's state
    /// refers to the lane's ended read transaction until the writer replaces it with its own.
    // Unchecked Sendable: handed from one thread to the other, never held by two at once (see above).
    struct SecondLane<P: Projection>: @unchecked Sendable {
        var applier: BatchApplier<P>
        var lane: Lane
        /// Writes the projection tried in `apply` (refused by the read-only state).
        var refusedWrites: Int
    }

    /// The second part of a chunk, running on the lane thread; `wait()` returns what it did.
    final class PendingLane<P: Projection>: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let output = Mutex<Result<SecondLane<P>, any Error>?>(nil)

        func deliver(_ result: Result<SecondLane<P>, any Error>) {
            output.withLock { $0 = result }
            done.signal()
        }

        func wait() -> Result<SecondLane<P>, any Error> {
            done.wait()
            return output.withLock { $0.take()! }
        }
    }

    /// Reads the streams after `split` on the lane thread, in a read transaction of the
    /// projections' environment: the part's streams have no state in the generation yet (the
    /// build writes streams in order), so the state before this chunk is the one it would read.
    /// A projection that builds stream by stream only reads its state in `apply`.
    func startSecondLane<Log: StreamOrderedScanning, P: Projection>(
        _ projection: P, from log: Log, name: String, generation: Generation, after split: [UInt8], through: UInt64, batchSize: Int, givesWay: Bool
    ) -> PendingLane<P> {
        let pending = PendingLane<P>()
        let databases = generation.databases
        let environment = environment
        do {
            try lanes.submit { [self] in
                let result = Result<SecondLane<P>, any Error> {
                    try environment.read { txn in
                        let refusals = ProjectionState.RefusedWrites()
                        var applier = BatchApplier(
                            projection: projection, name: name,
                            state: ProjectionState(transaction: txn, databases: databases, refusedWrites: refusals),
                            reached: 0)
                        let lane = try scanLane(
                            log, after: split, through: through, until: nil, batchSize: batchSize, givesWay: givesWay, applier: &applier)
                        return SecondLane(applier: applier, lane: lane, refusedWrites: refusals.count)
                    }
                }
                pending.deliver(result)
            }
        } catch {
            // The store is closing and has shut the lane down: the part fails, and its chunk with it.
            pending.deliver(.failure(error))
        }
        return pending
    }

    /// Applies whole streams after `streamAfter`: until the stream `until` is done, or, without
    /// one, until `batchSize` records are applied (or fewer, for a waiting command) at the end of
    /// a stream, or the projection fails. A record the log cannot read fails the chunk there.
    func scanLane<Log: StreamOrderedScanning, P: Projection>(
        _ log: Log, after streamAfter: [UInt8]?, through: UInt64, until: [UInt8]?, batchSize: Int, givesWay: Bool, applier: inout BatchApplier<P>
    ) throws -> Lane {
        var current: [UInt8]?
        var finished: [UInt8]? = streamAfter
        var ended = true
        do {
            try log.scanStreams(after: streamAfter, through: through, batchSize: 1_024) { record in
                let starts = record.withStreamIDBytes { bytes in current.map { !Self.same(bytes, $0) } ?? true }
                if starts {
                    if current != nil { finished = current }
                    // Between two streams: end the part at the cut, or when it is full, or early for
                    // a command waiting for the serving generation (it waits for this thread).
                    let full =
                        until.map { until in record.withStreamIDBytes { bytes in until.withUnsafeBytes { KeyOrder.precedes($0, bytes) } } }
                        ?? (applier.count >= batchSize)
                    if full || (givesWay && applier.count >= 1_024 && state.withLock { !$0.appliedWaiters.isEmpty }) {
                        ended = false
                        return false
                    }
                    current = record.withStreamIDBytes { Array($0) }
                }
                return applier.apply(record)
            }
        } catch let error as EventLogError {
            // The log itself could not be read here (e.g. a corrupt record): the chunk fails there.
            throw ChunkFailed(failure: .failed(projection: applier.name, position: applier.reached + 1, reason: error.description))
        }
        return Lane(ended: ended, finished: finished)
    }

    /// Whether a stream id's bytes equal `known`, compared as memory (the generic element-wise
    /// comparison was 6 % of a rebuild's instructions, callgrind, 1 M events).
    private static func same(_ bytes: UnsafeRawBufferPointer, _ known: [UInt8]) -> Bool {
        guard bytes.count == known.count else { return false }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        return known.withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
    }
}
