//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB

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
    /// With `givesWay`, a chunk also ends early, after 1,024 records, while a command waits for the
    /// serving generation; a first build does not (the serving generation is not advanced until
    /// the build takes over).
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
                var current: [UInt8]?
                var finished: [UInt8]? = marker.lastStream
                var ended = true
                do {
                    try log.scanStreams(after: marker.lastStream, through: marker.through, batchSize: 1_024) { record in
                        let starts = record.withStreamIDBytes { bytes in current.map { !Self.same(bytes, $0) } ?? true }
                        if starts {
                            if current != nil { finished = current }
                            // Between two streams: end the chunk when it is full, or early for a
                            // command waiting for the serving generation (it waits for this thread).
                            if applier.count >= batchSize || (givesWay && applier.count >= 1_024 && state.withLock { !$0.appliedWaiters.isEmpty }) {
                                ended = false
                                return false
                            }
                            current = record.withStreamIDBytes { Array($0) }
                        }
                        return applier.apply(record)
                    }
                } catch let error as EventLogError {
                    throw ChunkFailed(failure: .failed(projection: name, position: applier.reached + 1, reason: error.description))
                }
                if let storageFailure = applier.storageFailure { throw storageFailure }
                if let failure = applier.failure { throw ChunkFailed(failure: failure) }
                try applier.finish()
                marker.applied += UInt64(applier.count)
                if ended {
                    _ = try txn.delete(meta, key: markerKey)
                    try txn.put(meta, key: fingerprintKey, value: Array(projection.fingerprint.utf8))
                    try txn.put(meta, key: MetaKeys.checkpoint(name, generation.number), value: BigEndian.bytes(marker.through))
                    return .committed(BatchOutcome(reached: marker.through, failure: nil, streamApplied: marker.applied))
                }
                marker.lastStream = finished
                try txn.put(meta, key: markerKey, value: marker.bytes)
                return .committed(BatchOutcome(reached: 0, failure: nil, streamApplied: marker.applied))
            }
        } catch let failed as ChunkFailed {
            return .committed(BatchOutcome(reached: 0, failure: failed.failure))
        }
    }

    /// Whether a stream id's bytes equal `known`, compared as memory (the generic element-wise
    /// comparison was 6 % of a rebuild's instructions, callgrind, 1 M events).
    private static func same(_ bytes: UnsafeRawBufferPointer, _ known: [UInt8]) -> Bool {
        guard bytes.count == known.count else { return false }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        return known.withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
    }
}
