//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import Metrics

/// What one batch reached.
struct BatchOutcome: Sendable {
    /// The last position applied (the stored checkpoint when nothing was).
    let reached: UInt64
    /// Why the projection stopped, if it did.
    let failure: ProjectionError?
    /// In a rebuild applied stream by stream: the records applied so far.
    var streamApplied: UInt64?
    /// The chunk's second part, read on the lane thread, was written with the first.
    var readInTwoParts = false
    /// The batch wrote nothing and was not committed: its checkpoint is kept in memory.
    var quiet = false
}

/// Folds the records of one batch into a projection's state, with the projection's typed batch
/// state, and keeps apart the two ways a record can fail.
struct BatchApplier<P: Projection> {
    let projection: P
    let name: String
    var state: ProjectionState
    var batch: P.BatchState
    /// The last position applied.
    var reached: UInt64
    var count = 0
    /// The projection threw: it stops at this record.
    var failure: ProjectionError?
    /// The projections' own storage failed, or a backend the projection reads through (a key vault
    /// on PostgreSQL) is briefly unavailable: the batch is abandoned and retried.
    var storageFailure: (any Error)?

    init(projection: P, name: String, state: ProjectionState, reached: UInt64) {
        self.projection = projection
        self.name = name
        self.state = state
        self.batch = projection.makeBatchState()
        self.reached = reached
    }

    /// Applies one record; false when the batch must end here.
    mutating func apply(_ record: some LogRecord) -> Bool {
        do {
            try projection.apply(record, to: state, batch: &batch)
        } catch let error as LMDBError {
            storageFailure = error
            return false
        } catch let error where isTransientFailure(error) {
            // Not the record's fault: the batch is retried, the projection not stopped.
            storageFailure = error
            return false
        } catch is ProjectionState.ReadOnlyState {
            // A write in `apply` on the lane thread: the part stops here and is dropped (the
            // state counted the write).
            return false
        } catch {
            failure = .failed(projection: name, position: record.position, reason: "\(error)")
            return false
        }
        reached = record.position
        count += 1
        return true
    }

    /// Writes out what the batch kept in memory.
    mutating func finish() throws {
        try projection.finishBatch(&batch, state: state)
    }
}

/// What the projection runner reports through swift-metrics, per projection (dimension
/// `projection`) and store (dimension `path`).
struct RunnerMetrics: Sendable {
    let path: String
    /// Jobs the runner gave the store's thread, each a hop there and back: one a round as usual
    /// (every projection's batch), more while a generation is built or dropped.
    let storeThreadJobs: Counter

    init(path: String) {
        self.path = path
        storeThreadJobs = Counter(label: "projection_store_thread_jobs", dimensions: [("path", path)])
    }

    /// Log records the serving generation has still to apply, after each batch.
    func lag(_ projection: String) -> Gauge {
        Gauge(label: "projection_lag", dimensions: [("projection", projection), ("path", path)])
    }

    /// Chunks of a stream-by-stream build whose second part, read on the lane thread, was
    /// written with the first (a chunk read in one part does not count).
    func chunksReadInTwoParts(_ projection: String) -> Counter {
        Counter(label: "projection_chunks_read_in_two_parts", dimensions: [("projection", projection), ("path", path)])
    }

    /// Batches of the serving generation that wrote nothing and so were not committed (no flush):
    /// their checkpoint stays in memory until a later batch or the store's close stores it.
    func quietBatches(_ projection: String) -> Counter {
        Counter(label: "projection_quiet_batches", dimensions: [("projection", projection), ("path", path)])
    }

    /// How far a rebuild has come, 0 to 1, after each batch.
    func rebuildProgress(_ projection: String) -> Gauge {
        Gauge(label: "projection_rebuild_progress", dimensions: [("projection", projection), ("path", path)])
    }
}
