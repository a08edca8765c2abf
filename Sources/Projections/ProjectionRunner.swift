//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import Logging
import Metrics

extension ProjectionStore {
    static let logger = Logger(label: "Projections")

    /// The runner: applies new records to every generation, starts requested rebuilds, hands over
    /// caught-up rebuilt generations, and sleeps until the log grows. It consumes the log a batch
    /// at a time, catch-up first and then live: a backend that scans in place (the LMDB log) is
    /// read inside the state's write transaction without copies; any other backend's batch is
    /// fetched first, outside the transaction, and then applied inside one.
    func run() async {
        /// The storage failure last logged, so that a failure repeated every retry is logged once.
        var reported: String?
        /// When the current outage began, and how many retries it took so far.
        var outage: (since: ContinuousClock.Instant, retries: Int)?
        while !Task.isCancelled {
            let worked: Bool
            do {
                worked = try await step()
            } catch {
                if state.withLock({ $0.closed }) { return }
                // A storage failure of the projections environment, of reading the log, or of a
                // backend a projection reads through (a key vault on PostgreSQL): it is logged
                // once, shown by status(), and retried with capped exponential backoff and jitter;
                // waiting commands give up after their timeout.
                let message = String(describing: error)
                let retries = (outage?.retries ?? 0) + 1
                let since = outage?.since ?? .now
                outage = (since, retries)
                state.withLock { state in
                    state.storageError = message
                    state.storageErrorSince = state.storageErrorSince ?? Date()
                }
                if reported != message {
                    Self.logger.error(
                        "projections cannot advance; retrying",
                        metadata: ["error": "\(message)", "path": "\(environment.path)", "transient": "\(isTransientFailure(error))"])
                    reported = message
                }
                try? await Task.sleep(for: Self.retryDelay(attempt: retries))
                continue
            }
            if let current = outage {
                state.withLock { state in
                    state.storageError = nil
                    state.storageErrorSince = nil
                }
                let lasted = ContinuousClock.now - current.since
                Self.logger.notice(
                    "projections advance again",
                    metadata: [
                        "path": "\(environment.path)",
                        "outage-seconds": "\(Double(lasted.components.seconds) + Double(lasted.components.attoseconds) / 1e18)",
                        "retries": "\(current.retries)"
                    ])
                reported = nil
                outage = nil
            }
            if worked {
                await Task.yield()
                continue
            }
            let lowest =
                state.withLock { state in
                    order.compactMap { name -> UInt64? in
                        guard state.failures[name] == nil else { return nil }
                        return [state.active[name]?.checkpoint, state.building[name]?.checkpoint].compactMap { $0 }.min()
                    }.min()
                } ?? UInt64.max
            var head = lowest
            if lowest == .max {
                do {
                    head = try await log.lastPosition()
                } catch {
                    // Waiting beyond 0 wakes at the next commit, when the log is asked again.
                    Self.logger.notice("cannot read the log's head while idle; waiting for the next commit", metadata: ["error": "\(error)"])
                    head = 0
                }
            }
            let last = head
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [log] in await log.waitForCommit(beyond: last) }
                group.addTask { [kick] in await kick.wait() }
                _ = await group.next()
                group.cancelAll()
            }
        }
    }

    /// The pause before retry `attempt` (1, 2, …) of a failed round: 50 ms doubled per attempt up
    /// to 1 s, each with up to 50 % of random jitter (so that nodes sharing a restarted server do
    /// not come back in step).
    static func retryDelay(attempt: Int) -> Duration {
        let base = min(1_000, 50 << min(attempt - 1, 5))
        return .milliseconds(base / 2 + Int.random(in: 0...base / 2))
    }

    /// One round: starts requested rebuilds, applies a batch to every generation that is behind,
    /// hands over caught-up rebuilds. True when it applied anything. The write transactions and
    /// their flushes run on the store's own thread.
    private func step() async throws -> Bool {
        var worked = false
        // Only when there is something to drop or start: the usual round has neither, and a hop
        // to the store's thread for nothing costs two thread wake-ups (two of a sign-in's three
        // hops there).
        if state.withLock({ !$0.retired.isEmpty || !$0.requestedRebuilds.isEmpty }) {
            try await onStoreThread { [self] in
                try dropUnreadRetired()
                try startRequestedRebuilds()
            }
        }
        let last = try await log.lastPosition()
        if let worked = try await stepInPlace(upTo: last) { return worked }
        for name in order {
            // The serving generation first, so that reads stay fresh during a rebuild; but an
            // empty one is not built in log order while a generation is built stream by stream
            // beside it (a first build: that generation takes over once built).
            if !firstBuildsByStream(name), try await advance(name, building: false, upTo: last) { worked = true }
            if try await advance(name, building: true, upTo: last) { worked = true }
            let logHead = try await logHeadBehindServing(name, last: last)
            try await onStoreThread { [self] in try takeOverIfCaughtUp(name, logHead: logHead) }
        }
        return worked
    }

    /// The usual round in one hop to the store's thread: the log is read in place and no
    /// generation is being built, so every projection's batch is a write transaction there and
    /// nothing else is to do (no take-over, no stream build). A hop per projection (and one more
    /// each for the take-over check) cost a thread wake-up and a resumption each: some 60 `futex`
    /// calls a sign-in. Nil when the round must go the general way.
    private func stepInPlace(upTo last: UInt64) async throws -> Bool? {
        guard let scanning = log as? any InPlaceScanning else { return nil }
        let plan = state.withLock { state -> [(name: String, generation: Generation)]? in
            guard state.building.isEmpty else { return nil }
            return order.compactMap { name in
                guard state.failures[name] == nil, let active = state.active[name], active.checkpoint < last else { return nil }
                return (name, active)
            }
        }
        guard let plan else { return nil }
        if plan.isEmpty { return false }
        // As in the general round, a failure ends the round; the batches committed before it are
        // finished (their checkpoints and waiters) first.
        let (outcomes, failure) = try await onStoreThread { [self] () -> ([BatchOutcome?], (any Error)?) in
            var outcomes: [BatchOutcome?] = []
            for (name, generation) in plan {
                guard let projection = projections[name] else {
                    outcomes.append(nil)
                    continue
                }
                do {
                    outcomes.append(
                        try commitInPlace(projection, name: name, generation: generation, building: false, last: last, scanning: scanning))
                } catch {
                    return (outcomes, error)
                }
            }
            return (outcomes, nil)
        }
        var worked = false
        for ((name, generation), outcome) in zip(plan, outcomes) {
            if try await settle(name, building: false, generation: generation, outcome: outcome, last: last) { worked = true }
        }
        if let failure { throw failure }
        return worked
    }

    /// One batch of a generation, read in place inside its write transaction (on the store's thread).
    private func commitInPlace<P: Projection>(
        _ projection: P, name: String, generation: Generation, building: Bool, last: UInt64, scanning: any InPlaceScanning
    ) throws -> BatchOutcome? {
        let batchSize = batchLimit(behind: last - generation.checkpoint)
        return try commitBatch(projection, name: name, generation: generation, building: building, last: last) { start, applier in
            // A rebuild gives way, between chunks of its batch, to a command waiting for the serving generation.
            try applyInPlace(from: scanning, after: start, batchSize: batchSize, applier: &applier) {
                building && state.withLock { !$0.appliedWaiters.isEmpty }
            }
        }
    }

    /// The log's head, while `name` is rebuilt and its serving generation has applied records past
    /// it; nil otherwise. The log lost those records: a power cut took appends a relaxed log had
    /// not flushed, or a failover went to a standby that had not received them. The head is asked
    /// again after the checkpoint is read: a log that loses nothing has reached it by then (another
    /// process may have advanced the checkpoint past `last`, read before it).
    private func logHeadBehindServing(_ name: String, last: UInt64) async throws -> UInt64? {
        let serving = state.withLock { state -> UInt64? in
            guard state.building[name] != nil, let active = state.active[name], active.checkpoint > last else { return nil }
            return active.checkpoint
        }
        guard let serving else { return nil }
        let head = try await log.lastPosition()
        return head < serving ? head : nil
    }

    /// Applies up to one batch of records to a generation; true when it applied any.
    private func advance(_ name: String, building: Bool, upTo last: UInt64) async throws -> Bool {
        guard let projection = projections[name] else { return false }
        let snapshot = state.withLock { state -> Generation? in
            guard state.failures[name] == nil else { return nil }
            return building ? state.building[name] : state.active[name]
        }
        guard let generation = snapshot, generation.checkpoint < last else { return false }
        let outcome = try await fetchAndCommit(projection, name: name, generation: generation, building: building, last: last)
        return try await settle(name, building: building, generation: generation, outcome: outcome, last: last)
    }

    /// After a generation's batch: follows a generation another process replaced (nil outcome),
    /// else records the batch (``finishAdvance``). True when the round did any work.
    private func settle(_ name: String, building: Bool, generation: Generation, outcome: BatchOutcome?, last: UInt64) async throws -> Bool {
        guard let outcome else {
            // Another process replaced the generation (a rebuild took over): follow it.
            try await onStoreThread { [self] in try refreshGenerations() }
            return true
        }
        finishAdvance(name, building: building, generation: generation, outcome: outcome, last: last)
        return outcome.reached > generation.checkpoint || outcome.streamApplied != nil
    }

    /// Reads the next batch for a generation and commits it (see ``commitBatch``).
    private func fetchAndCommit<P: Projection>(
        _ projection: P, name: String, generation: Generation, building: Bool, last: UInt64
    ) async throws -> BatchOutcome? {
        let batchSize = batchLimit(behind: last - generation.checkpoint)
        if building, generation.checkpoint == 0, projection.buildsStreamByStream, let ordered = log as? any StreamOrderedScanning {
            let givesWay = !firstBuildsByStream(name)
            let chunk = try await onStoreThread { [self] in
                try streamChunk(projection, from: ordered, name: name, generation: generation, batchSize: batchSize, givesWay: givesWay)
            }
            switch chunk {
            case .replaced: return nil
            case let .committed(outcome): return outcome
            case .inLogOrder: break
            }
        }
        if let scanning = log as? any InPlaceScanning {
            return try await onStoreThread { [self] in
                try commitInPlace(projection, name: name, generation: generation, building: building, last: last, scanning: scanning)
            }
        }
        // Fetched outside the write transaction, in reads of at most 1,024 and in all at most
        // 16,384 (they are held in memory); a record another process applied meanwhile (the
        // stored checkpoint moved on) is skipped inside it.
        var records: [RecordedEvent] = []
        while records.count < min(batchSize, 16_384) {
            let next = (records.last?.position ?? generation.checkpoint) + 1
            let chunk = try await log.read(from: next, direction: .forward, limit: min(batchSize - records.count, 1_024))
            records += chunk
            if chunk.count < 1_024 || records.last!.position >= last { break }
        }
        return try await onStoreThread { [self, records] in
            try commitBatch(projection, name: name, generation: generation, building: building, last: last) { start, applier in
                guard let first = records.first, first.position <= start + 1 else { return }
                for record in records where record.position > start {
                    guard applier.apply(record) else { return }
                }
            }
        }
    }

    /// How many records one transaction applies to a generation `behind` records behind the log.
    private func batchLimit(behind: UInt64) -> Int {
        let size = max(1, options.batchSize)
        return behind > UInt64(size) ? max(size, options.catchUpBatchSize) : size
    }

    /// Calls `body` with every record after `start` in place, until the batch is full, or, at
    /// the end of a chunk of 1,024 records, `givesWay` is true.
    private func applyInPlace<Log: InPlaceScanning, P: Projection>(
        from log: Log, after start: UInt64, batchSize: Int, applier: inout BatchApplier<P>, givesWay: () -> Bool
    ) throws {
        do {
            try log.scan(from: start + 1, batchSize: min(batchSize, 1_024)) { record in
                applier.apply(record) && applier.count < batchSize && (applier.count % 1_024 != 0 || !givesWay())
            }
        } catch let error as EventLogError where !error.isTransient {
            // The log itself could not be read here (e.g. a corrupt record): stop this projection.
            // A transient failure goes up instead: the batch is retried.
            applier.failure = .failed(projection: applier.name, position: applier.reached + 1, reason: error.description)
        }
    }

    /// One write transaction: checks that the generation still serves (or builds), reads its
    /// stored checkpoint, lets `feed` apply records after it, finishes the batch and stores the
    /// checkpoint with the state. Nil when another process replaced the generation.
    private func commitBatch<P: Projection>(
        _ projection: P, name: String, generation: Generation, building: Bool, last: UInt64,
        feed: (_ start: UInt64, _ applier: inout BatchApplier<P>) throws -> Void
    ) throws -> BatchOutcome? {
        do {
            return try environment.write { txn -> BatchOutcome? in
                // Other processes may run the same projections on this environment: the generation and
                // checkpoint in the meta database, read inside this write transaction (which excludes
                // theirs), are the truth, so no record is applied twice or skipped.
                let slot = building ? MetaKeys.building(name) : MetaKeys.active(name)
                guard MetaKeys.u32(try txn.get(meta, key: slot)) == generation.number else { return nil }
                let stored = MetaKeys.u64(try txn.get(meta, key: MetaKeys.checkpoint(name, generation.number))) ?? 0
                // Past the stored checkpoint, this process's own may have applied records that
                // wrote nothing without committing (a quiet batch, below): they are not applied again.
                let start = building ? stored : Swift.max(stored, generation.checkpoint)
                guard start < last else { return BatchOutcome(reached: start, failure: nil) }
                let writes = building ? nil : ProjectionState.WriteCount()
                let projectionState = ProjectionState(transaction: txn, databases: generation.databases, writes: writes)
                var applier = BatchApplier(projection: projection, name: name, state: projectionState, reached: start)
                try feed(start, &applier)
                // A storage error of the projections' own environment is not the projection's fault:
                // the batch is abandoned and retried (the runner reports it), the projection not stopped.
                if let storageFailure = applier.storageFailure { throw storageFailure }
                try applier.finish()
                let outcome = BatchOutcome(reached: applier.reached, failure: applier.failure)
                if let writes, writes.count == 0, applier.failure == nil, applier.reached - stored < ProjectionStore.quietCheckpointSpan {
                    // Nothing to write but the checkpoint: no commit and no flush (each projection
                    // commits apart, so an append of events most projections ignore, such as a
                    // sign-in's, would otherwise flush once per projection).
                    var quiet = outcome
                    quiet.quiet = true
                    throw QuietBatch(outcome: quiet)
                }
                try txn.put(meta, key: MetaKeys.checkpoint(name, generation.number), value: BigEndian.bytes(applier.reached))
                return outcome
            }
        } catch let quiet as QuietBatch {
            return quiet.outcome
        }
    }

    /// Ends a batch of the serving generation that wrote nothing: its transaction is abandoned,
    /// and the checkpoint it reached is kept in memory (stored by a later batch that writes, by
    /// one that reaches ``ProjectionStore/quietCheckpointSpan`` past the stored checkpoint, or
    /// when the store closes).
    private struct QuietBatch: Error {
        let outcome: BatchOutcome
    }

    /// Stores the checkpoints that quiet batches left in memory only (when the store closes).
    func storeQuietCheckpoints() throws {
        let active = state.withLock { $0.active }
        try environment.write { txn in
            for (name, generation) in active {
                guard MetaKeys.u32(try txn.get(meta, key: MetaKeys.active(name))) == generation.number else { continue }
                let key = MetaKeys.checkpoint(name, generation.number)
                let stored = MetaKeys.u64(try txn.get(meta, key: key)) ?? 0
                if generation.checkpoint > stored { try txn.put(meta, key: key, value: BigEndian.bytes(generation.checkpoint)) }
            }
        }
    }

    /// Records a committed batch: the generation's checkpoint, waiters, progress and metrics.
    private func finishAdvance(_ name: String, building: Bool, generation: Generation, outcome: BatchOutcome, last: UInt64) {
        // After the commit: a transaction retried (a map resize) or not committed counts nothing.
        if outcome.readInTwoParts { metrics.chunksReadInTwoParts(name).increment() }
        if outcome.quiet { metrics.quietBatches(name).increment() }
        var generation = generation
        generation.checkpoint = outcome.reached
        let failure = outcome.failure
        let (ready, failed, progress) = state.withLock { state in
            state.storageError = nil
            state.storageErrorSince = nil
            if building {
                if state.building[name]?.number == generation.number { state.building[name] = generation }
            } else if state.active[name]?.number == generation.number {
                state.active[name] = generation
                state.lastAdvanced[name] = Date()
            }
            if let failure { state.failures[name] = failure }
            return (
                takeReadyWaiters(&state), failure.map { takeFailedWaiters(&state, name: name, error: $0) } ?? [],
                building ? state.progress[name] : nil
            )
        }
        for waiter in ready { waiter.resume() }
        if let failure { for waiter in failed { waiter.resume(throwing: failure) } }
        let applied = outcome.streamApplied.map { Swift.min($0, last) } ?? outcome.reached
        progress?(applied, last)
        if building {
            metrics.rebuildProgress(name).record(last == 0 ? 1 : Double(applied) / Double(last))
        } else {
            metrics.lag(name).record(last > outcome.reached ? Double(last - outcome.reached) : 0)
        }
    }

    /// Waiters whose positions the serving generations have reached.
    func takeReadyWaiters(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        var ready: [CheckedContinuation<Void, any Error>] = []
        state.appliedWaiters.removeAll { waiter in
            guard let active = state.active[waiter.name], active.checkpoint >= waiter.position else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }

    private func takeFailedWaiters(_ state: inout State, name: String, error: ProjectionError) -> [CheckedContinuation<Void, any Error>] {
        var failed: [CheckedContinuation<Void, any Error>] = []
        state.appliedWaiters.removeAll { waiter in
            guard waiter.name == name else { return false }
            failed.append(waiter.continuation)
            return true
        }
        return failed + Self.takeRebuildWaiters(of: name, &state)
    }

    /// Removes the waiters of the projection's rebuild from `state` and returns them, to be resumed.
    static func takeRebuildWaiters(of name: String, _ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        var taken: [CheckedContinuation<Void, any Error>] = []
        state.rebuildWaiters.removeAll { waiter in
            guard waiter.name == name else { return false }
            taken.append(waiter.continuation)
            return true
        }
        return taken
    }
}
