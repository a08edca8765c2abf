//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

internal import BlockingPool
import EventLogProtocol
import Foundation
internal import LMDB
import Logging
import Synchronization

/// Options for a ``ProjectionStore``.
public struct ProjectionStoreOptions: Sendable {
    /// The most records applied in one transaction.
    public var batchSize = 4_096
    /// The most records applied in one transaction by a generation more than ``batchSize``
    /// records behind the log: a rebuild, or a first build. Each commit writes every page its
    /// batch changed, and a batch's accounts lie scattered over the whole state, so larger
    /// commits write far less in all (a rebuild of 1 M events wrote a few hundred MB in batches
    /// of 4,096). A rebuilding generation ends its batch early while a command waits for the
    /// serving one (``ProjectionStore/waitUntilApplied(_:position:)``).
    public var catchUpBatchSize = 65_536
    /// Projections can be rebuilt from the log, so by default a power loss may undo their last commit
    /// (never damage them): one flush per batch instead of two.
    public var sync: Durability = .lastCommitMayRollBack
    /// The map size to start with; it grows by itself.
    public var initialMapSize = 1 << 30
    /// How long ``ProjectionStore/waitUntilApplied(_:position:)`` waits before it gives up with
    /// ``ProjectionError/timedOut(projection:position:lastError:)`` (a runner that cannot write
    /// must not make commands hang).
    public var readYourWritesTimeout: Duration = .seconds(30)

    /// Creates the default value.
    public init() {}
}

/// Keeps projections of an event log in their own LMDB environment and keeps them up to date.
///
/// A single runner task follows the log: for each projection it applies new records in batches, and
/// commits each batch's state together with its checkpoint. A rebuild (asked for, or because the
/// projection's fingerprint changed) is blue/green: a new generation is built from position 1 beside
/// the serving one, which keeps receiving new records and serving reads, and takes over in one
/// transaction once it has caught up (or, if the log lost records the serving one had applied, once
/// it has reached the end of the log).
public final class ProjectionStore: Sendable {
    /// How far past its stored checkpoint a serving generation may apply records that write
    /// nothing before a batch commits the checkpoint anyway: what a process that stops without
    /// closing the store applies again, as no-ops, at the next open.
    static let quietCheckpointSpan: UInt64 = 4_096

    struct State {
        var active: [String: Generation] = [:]
        var building: [String: Generation] = [:]
        var failures: [String: ProjectionError] = [:]
        var requestedRebuilds: Set<String> = []
        var appliedWaiters: [(name: String, position: UInt64, id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextWaiterID: UInt64 = 0
        /// The last storage failure of the runner (cleared by the next round that succeeds).
        var storageError: String?
        /// When the runner's current storage failures began.
        var storageErrorSince: Date?
        /// When each serving generation last applied a batch (or the store opened).
        var lastAdvanced: [String: Date] = [:]
        let openedAt = Date()
        var rebuildWaiters: [(name: String, id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var progress: [String: @Sendable (UInt64, UInt64) -> Void] = [:]
        var closed = false
        /// Projections that write their state in `apply`: their rebuilds read each chunk in one part.
        var singlePart: Set<String> = []
        /// Generations this process replaced, whose databases it deletes once no read is inside them.
        var retired: [(name: String, generation: Generation)] = []
    }

    /// The log it follows.
    public let log: any EventLogReader
    let environment: Environment
    let meta: Database
    let options: ProjectionStoreOptions
    let projections: [String: any Projection]
    let order: [String]
    let state = Mutex(State())
    let kick = Signal()
    /// The thread that runs the projections' write transactions (through ``onStoreThread(_:)``).
    let worker = BlockingPool(threads: 1, name: "projections")
    /// The thread that reads the second part of a rebuild's chunk while the worker reads the first.
    let lanes = BlockingPool(threads: 1, name: "projection lane")
    let metrics: RunnerMetrics
    private let runner = Mutex<Task<Void, Never>?>(nil)

    /// Opens (or creates) the projections in the directory at `path` and starts following the log.
    /// A projection whose stored fingerprint differs from its current one starts rebuilding at once.
    ///
    /// - Parameters:
    ///   - path: the store's folder, created when missing.
    ///   - log: the log the projections follow.
    ///   - projections: the projections, each with its own name.
    ///   - options: durability, batch sizes and the read-your-writes timeout.
    /// - Throws: ``ProjectionError`` `.duplicateName` when two projections share a name, the log's error
    ///   when it cannot be read, or the storage's error when the store's files cannot be opened.
    public init(
        path: String, log: any EventLogReader, projections: [any Projection], options: ProjectionStoreOptions = ProjectionStoreOptions()
    ) throws {
        var seen = Set<String>()
        for projection in projections where !seen.insert(projection.name).inserted {
            throw ProjectionError.duplicateName(projection.name)
        }
        var environmentOptions = EnvironmentOptions()
        environmentOptions.maxDatabases = UInt32(8 + projections.reduce(0) { $0 + 2 * $1.databaseNames.count })
        environmentOptions.setDurability(options.sync)
        environmentOptions.initialMapSize = options.initialMapSize
        let environment = try Environment(path: path, options: environmentOptions)
        self.log = log
        self.environment = environment
        self.metrics = RunnerMetrics(path: environment.path)
        self.options = options
        self.projections = Dictionary(uniqueKeysWithValues: projections.map { ($0.name, $0) })
        self.order = projections.map(\.name)
        do {
            meta = try environment.openDatabase(MetaKeys.database)
            let meta = meta
            // A first build on a log longer than a catch-up batch goes stream by stream where it can.
            let streamOrderLimit = try (log as? any StreamOrderedScanning)?.streamOrderLimit() ?? 0
            let firstBuildByStream = streamOrderLimit > UInt64(max(options.batchSize, options.catchUpBatchSize))
            let (active, building) = try environment.write { txn in
                try Self.openGenerations(
                    projections, catalog: GenerationCatalog(transaction: txn, meta: meta), firstBuildByStream: firstBuildByStream)
            }
            state.withLock {
                $0.active = active
                $0.building = building
            }
        } catch {
            worker.shutdown()
            lanes.shutdown()
            environment.close()
            throw error
        }
        let task = Task.detached { [self] in await run() }
        runner.withLock { $0 = task }
    }

    /// The serving and rebuilding generations of each projection. A projection new to the store
    /// gets an empty serving generation; with `firstBuildByStream`, one whose streams are
    /// independent also gets a generation built beside it stream by stream, which takes over once
    /// built (the empty one is not advanced meanwhile: see `step`).
    private static func openGenerations(
        _ projections: [any Projection], catalog: GenerationCatalog, firstBuildByStream: Bool
    )
        throws -> (active: [String: Generation], building: [String: Generation])
    {
        var active: [String: Generation] = [:]
        var building: [String: Generation] = [:]
        let txn = catalog.transaction
        for projection in projections {
            let name = projection.name
            try catalog.dropRetired(projection)
            guard let activeNumber = MetaKeys.u32(try txn.get(catalog.meta, key: MetaKeys.active(name))) else {
                let fresh = try catalog.create(projection)
                try txn.put(catalog.meta, key: MetaKeys.active(name), value: MetaKeys.u32(fresh.number))
                active[name] = fresh
                if firstBuildByStream && projection.buildsStreamByStream {
                    let built = try catalog.create(projection)
                    try txn.put(catalog.meta, key: MetaKeys.building(name), value: MetaKeys.u32(built.number))
                    building[name] = built
                }
                continue
            }
            let current = try catalog.open(projection, number: activeNumber)
            active[name] = current
            var rebuilding: Generation?
            if let buildingNumber = MetaKeys.u32(try txn.get(catalog.meta, key: MetaKeys.building(name))) {
                let candidate = try catalog.open(projection, number: buildingNumber)
                if try catalog.matches(projection, buildingNumber) {
                    rebuilding = candidate
                } else {
                    try catalog.retire(name, candidate)
                    _ = try txn.delete(catalog.meta, key: MetaKeys.building(name))
                }
            }
            if rebuilding == nil, try catalog.fingerprint(name, activeNumber) != projection.fingerprint {
                rebuilding = try catalog.create(projection)
                try txn.put(catalog.meta, key: MetaKeys.building(name), value: MetaKeys.u32(rebuilding!.number))
            }
            building[name] = rebuilding
        }
        return (active, building)
    }

    /// Stops following the log, fails anyone still waiting, and closes the files.
    public func close() async {
        let pending = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.closed = true
            defer {
                state.appliedWaiters.removeAll()
                state.rebuildWaiters.removeAll()
            }
            return state.appliedWaiters.map(\.continuation) + state.rebuildWaiters.map(\.continuation)
        }
        for waiter in pending { waiter.resume(throwing: ProjectionError.closed) }
        let task = runner.withLock { $0 }
        task?.cancel()
        kick.signal()
        await task?.value
        do {
            try await onStoreThread { [self] in try storeQuietCheckpoints() }
        } catch {
            // Nothing is lost: the records after the stored checkpoints are applied again at the next open.
            Self.logger.warning("cannot store the projections' checkpoints at close", metadata: ["path": "\(environment.path)", "error": "\(error)"])
        }
        worker.shutdown()
        lanes.shutdown()
        environment.close()
    }

    // MARK: Reading

    /// Runs `body` on the serving generation of the named projection, in one read transaction
    /// (so a take-over by a rebuilt generation never shows a mix of the two).
    ///
    /// - Parameters:
    ///   - name: the projection's name.
    ///   - body: reads the state; it must not keep it beyond the call.
    /// - Returns: what `body` returns.
    /// - Throws: ``ProjectionError`` `.unknownProjection` for a name the store does not have, `body`'s
    ///   error, or the storage's error when the read fails.
    @inlinable
    public func read<T>(_ name: String, _ body: (ProjectionState) throws -> T) throws -> T {
        // Inlinable over a core that is not generic (see `Environment.read`).
        var result: T?
        try withServingState(name) { state in result = try body(state) }
        return result!
    }

    /// Calls `body` once with the serving generation's state of `name`, in a read transaction.
    @usableFromInline
    func withServingState(_ name: String, _ body: (ProjectionState) throws -> Void) throws {
        guard projections[name] != nil else { throw ProjectionError.unknownProjection(name) }
        for attempt in 0..<2 {
            let served = try environment.read { txn -> Bool in
                guard let number = MetaKeys.u32(try txn.get(meta, key: MetaKeys.active(name))) else {
                    throw ProjectionError.unknownProjection(name)
                }
                // Counted as a read of the generation while the lock is held, so that the
                // runner cannot delete its databases (close their handles) under this read.
                let generation = state.withLock { state -> Generation? in
                    let found =
                        if let active = state.active[name], active.number == number {
                            active
                        } else if let building = state.building[name], building.number == number {
                            building
                        } else {
                            Generation?.none
                        }
                    found?.readers.count.add(1, ordering: .relaxed)
                    return found
                }
                guard let generation else { return false }
                defer { generation.readers.count.subtract(1, ordering: .releasing) }
                try body(ProjectionState(transaction: txn, databases: generation.databases))
                return true
            }
            if served { return }
            // A generation made by another process serves now: open it, then read again.
            if attempt == 0 { try refreshGenerations() }
        }
        throw ProjectionError.unknownProjection(name)
    }

    /// Writes a consistent, compacted copy of the projections (state and checkpoints as of one
    /// moment) into `directory` (created when missing). Copy them before the log they follow, so
    /// that no checkpoint in the copy is beyond the copied log's end.
    ///
    /// - Parameter directory: the folder to write the copy to.
    /// - Throws: the file system's error when the folder cannot be created, or the storage's error
    ///   when the copy fails (for example when the folder holds a copy already).
    public func copy(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try environment.copy(to: directory, compact: true)
    }

    /// Where each projection stands.
    ///
    /// - Returns: one status per projection, in the order they were given.
    /// - Throws: the log's error when its last position cannot be read.
    public func status() async throws -> [ProjectionStatus] {
        let last = try await log.lastPosition()
        return state.withLock { state in
            order.compactMap { name in
                guard let active = state.active[name] else { return nil }
                let building = state.building[name].map { (generation: $0.number, checkpoint: $0.checkpoint) }
                return ProjectionStatus(
                    name: name, generation: active.number, checkpoint: active.checkpoint,
                    lag: last > active.checkpoint ? last - active.checkpoint : 0,
                    rebuilding: building, failure: state.failures[name]?.description, storageError: state.storageError,
                    storageErrorSince: state.storageErrorSince, lastAdvanced: state.lastAdvanced[name] ?? state.openedAt)
            }
        }
    }

    /// How many commands wait in ``waitUntilApplied(_:position:)`` (for tests).
    package var waitingCommands: Int { state.withLock { $0.appliedWaiters.count } }

    /// Returns once the serving generation of `name` has applied the record at `position`
    /// (read-your-writes after an append). Throws if the projection stopped on an error, after
    /// ``ProjectionStoreOptions/readYourWritesTimeout``, or with `CancellationError` when the
    /// waiting task is cancelled.
    ///
    /// - Parameters:
    ///   - name: the projection's name.
    ///   - position: the log position the caller appended (or read) and waits for.
    /// - Throws: ``ProjectionError`` `.unknownProjection` for a name the store does not have, `.failed`
    ///   when the projection stopped on an error, `.timedOut` after the timeout, `.closed` when the
    ///   store closes; `CancellationError` when the waiting task is cancelled.
    public func waitUntilApplied(_ name: String, position: UInt64) async throws {
        guard projections[name] != nil else { throw ProjectionError.unknownProjection(name) }
        let span = StoreTracing.startSpan("projection.wait")
        defer { span?.end() }
        span?.attributes["projection.name"] = name
        span?.attributes["log.position"] = Int(clamping: position)
        // Applied already (a store just opened on a built table, a read after a slow write): no
        // deadline task, no suspension.
        let id = try state.withLock { state -> UInt64? in
            if state.closed { throw ProjectionError.closed }
            if let failure = state.failures[name] { throw failure }
            if let active = state.active[name], active.checkpoint >= position { return nil }
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        guard let id else { return }
        let timeout = Task { [self] in
            try await Task.sleep(for: options.readYourWritesTimeout)
            let lastError = state.withLock { $0.storageError }
            endAppliedWait(id, ProjectionError.timedOut(projection: name, position: position, lastError: lastError))
        }
        defer { timeout.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.closed { return .failure(ProjectionError.closed) }
                    if let failure = state.failures[name] { return .failure(failure) }
                    if let active = state.active[name], active.checkpoint >= position { return .success(()) }
                    // Under the lock the cancellation handler takes: it finds this waiter or is seen here.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.appliedWaiters.append((name, position, id, continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            endAppliedWait(id, CancellationError())
        }
    }

    /// Ends the wait `id` of ``waitUntilApplied(_:position:)`` with `error`, if it still waits.
    private func endAppliedWait(_ id: UInt64, _ error: any Error) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard let index = state.appliedWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.appliedWaiters.remove(at: index).continuation
        }
        waiter?.resume(throwing: error)
    }

    /// Rebuilds the projection from position 1 beside the serving generation, which keeps serving
    /// reads; returns once the rebuilt generation has taken over. `progress` gets (applied, target).
    ///
    /// Cancelling the waiting task ends the wait with `CancellationError`; the rebuild goes on and
    /// takes over when it is done (a rebuild cancelled before it was requested is not requested).
    ///
    /// - Parameters:
    ///   - name: the projection's name.
    ///   - progress: called with the records applied and the log's last position as the rebuild goes
    ///     on, or nil.
    /// - Throws: ``ProjectionError`` `.unknownProjection` for a name the store does not have, `.failed`
    ///   when the rebuilt projection stops on an error, `.closed` when the store closes first;
    ///   `CancellationError` when the waiting task is cancelled.
    public func rebuild(_ name: String, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws {
        guard projections[name] != nil else { throw ProjectionError.unknownProjection(name) }
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refusal = state.withLock { state -> (any Error)? in
                    if state.closed { return ProjectionError.closed }
                    // Checked under the lock the cancellation handler takes: a cancellation
                    // either finds this waiter or is seen here.
                    if Task.isCancelled { return CancellationError() }
                    state.requestedRebuilds.insert(name)
                    state.rebuildWaiters.append((name, id, continuation))
                    if let progress { state.progress[name] = progress }
                    return nil
                }
                if let refusal { continuation.resume(throwing: refusal) } else { kick.signal() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.rebuildWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                // Its progress callback goes with it.
                if progress != nil { state.progress[name] = nil }
                return state.rebuildWaiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

extension ProjectionStore {
    /// Runs `body` on the store's thread and returns what it did. Each call is a hop there and
    /// back (two thread wake-ups), counted as `projection_store_thread_jobs`.
    func onStoreThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        metrics.storeThreadJobs.increment()
        return try await worker.run(body)
    }
}

extension EnvironmentOptions {
    /// The LMDB sync mode for a durability.
    mutating func setDurability(_ durability: Durability) {
        switch durability {
        case .durable: sync = .durable
        case .relaxed: sync = .relaxed
        case .lastCommitMayRollBack: sync = .lastCommitMayRollBack
        }
    }
}
