//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import BlockingPool
import DequeModule
import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat
import Logging
import Metrics
import Synchronization

/// The log's single writer, with group commit.
///
/// Every write transaction, and the `fdatasync` of its commit, runs on one dedicated thread: an
/// appender queues its request and suspends (its task gives its thread back to the cooperative
/// pool) until the commit that holds it is done. The thread drains the whole queue into each
/// transaction, so the appenders that arrived during one commit share the next one and its flush.
/// Exactly one write transaction runs at a time, begun and committed on that thread, never across
/// a suspension point, as LMDB requires.
// Unchecked Sendable: its queue is guarded by `condition`; the transaction state belongs to the writer thread alone.
final class AppendWriter: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending = Deque<AppendRequest>()
    private var stopping = false
    private var stopped = false
    /// Requests the last commit answered: their appenders are likely to append again at once.
    private var answeredLast = 0
    /// Requests queued since the last commit finished (the answered appenders coming back).
    private var returned = 0
    /// How long the last commit (its flush) took: the bound on waiting for appenders to come back.
    private var lastCommit: Duration = .zero
    /// True while the thread waits for appenders to come back.
    private var waitingForReturns = false
    /// How many queued requests wake the thread while it gathers a group.
    private static let gatherStep = 16
    /// How many requests are queued: `pending.count`, stored under the lock, read by the
    /// thread while it spins for the next request.
    private let queuedCount = Atomic<Int>(0)
    /// How long the thread looks for the next request before it sleeps, after a commit that
    /// answered a single request.
    private static let spinBudget: Duration = .microseconds(30)
    /// The most commits the thread goes without spinning after appenders came back late.
    static let maxSpinSkip = 64
    /// An appender back within this long after its answer counts as one the spin is for.
    static let spinNear: Duration = .microseconds(60)
    /// Commits to go without spinning, and how many the next far return skips (doubled by each
    /// one after a spin, reset by a near one): appenders that come back at once keep the spin,
    /// requests that come milliseconds apart (a server's sign-ins) stop paying for it. Only the
    /// thread uses them, under the condition's lock or outside it while ``busy``.
    private var spinsToSkip = 0
    private var spinSkip = 0
    /// Whether the thread spun after the last commit.
    private var spunLast = false
    /// When the last commit answered its one request (nil after a group, or once the next came).
    private var answeredAlone: ContinuousClock.Instant?
    /// Tasks waiting, suspended, for the thread to end (``stopAsync()``).
    private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    /// What the last commit left (read and written only by whoever holds ``busy``).
    private var lastCommitted: CommittedHead?
    /// True while a write transaction of this writer runs, on its thread or inline on an
    /// appender's (``commitInline(_:)``): whoever sets it under the lock runs the next one.
    private var busy = false
    /// True for a relaxed log: an append that finds the writer idle commits on its own thread.
    private let commitsInline: Bool
    /// Until when appends go to the thread after an inline commit that took too long (another
    /// process held the write lock, say).
    private var inlineResumesAt: ContinuousClock.Instant?

    /// The end of the log after one of this writer's commits, and that commit's transaction id.
    /// The next write transaction reuses it when its id follows that one: nothing was committed
    /// in between, so the head, the tail and the greatest indexed event id are as it left them.
    private struct CommittedHead {
        var transactionID: Int
        var head: LogHead
        /// The greatest key of the `event-ids` database; nil when the commit flushed the index.
        var lastEventID: (UInt64, UInt64)??
    }

    let environment: Environment
    let databases: LogDatabases
    let clock: @Sendable () -> Date
    private let maxBatchEvents: Int
    private let maxBatchBytes: Int
    private let onCommit: @Sendable (UInt64) -> Void
    let path: String
    private let metrics: WriterMetrics
    let tail: IndexTail
    let indexTailLimit: Int
    let bulkIndexTailLimit: Int
    private let idleIndexFlushDelay: Duration
    /// True after a bulk commit left more than ``indexTailLimit`` records unindexed: the thread
    /// writes them into the indexes once it has been idle for ``idleIndexFlushDelay``.
    private var flushWhenIdle = false
    let logger: Logger

    init(
        environment: Environment, databases: LogDatabases, tail: IndexTail, clock: @escaping @Sendable () -> Date,
        maxBatchEvents: Int, maxBatchBytes: Int, indexTailLimit: Int, bulkIndexTailLimit: Int, idleIndexFlushDelay: Duration,
        commitsInline: Bool, onCommit: @escaping @Sendable (UInt64) -> Void
    ) {
        self.commitsInline = commitsInline
        self.environment = environment
        self.databases = databases
        self.tail = tail
        self.indexTailLimit = max(indexTailLimit, 0)
        self.bulkIndexTailLimit = max(bulkIndexTailLimit, 0)
        self.idleIndexFlushDelay = idleIndexFlushDelay
        self.logger = Logger(label: "EventLog.writer")
        self.clock = clock
        self.maxBatchEvents = maxBatchEvents
        self.maxBatchBytes = maxBatchBytes
        self.onCommit = onCommit
        self.path = environment.path
        self.metrics = WriterMetrics(path: environment.path)
        let thread = Thread { [self] in
            BlockingPool.nameKernelThread("log writer")
            run()
        }
        thread.start()
    }

    /// Queues the request for the writer thread and returns after the commit that holds it; on a
    /// relaxed log, an append that finds the writer idle commits inline instead.
    func append(_ request: AppendRequest) async throws -> AppendResult {
        if commitsInline, let outcome = commitInline(request) { return try outcome.get() }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue([request]) { _, outcome in continuation.resume(with: outcome) }
        }
    }

    /// Queues `requests`, in order; `completion` gets each one's index in `requests` and its
    /// outcome after its commit. Returns at once.
    func enqueue(_ requests: [AppendRequest], completion: @escaping @Sendable (Int, Result<AppendResult, any Error>) -> Void) {
        condition.lock()
        if stopping {
            condition.unlock()
            for index in requests.indices { completion(index, .failure(EventLogError.closed(path: path))) }
            return
        }
        let wasEmpty = pending.isEmpty
        let now = ContinuousClock.now
        for (index, request) in requests.enumerated() {
            request.completion = { completion(index, $0) }
            request.queuedAt = now
            pending.append(request)
        }
        queuedCount.store(pending.count, ordering: .releasing)
        returned += requests.count
        // While the thread gathers a group it is woken when every answered appender is back or
        // when a few requests wait (to apply them meanwhile), not for each one: a wake-up per
        // request cost a context switch per request.
        if waitingForReturns ? returned >= answeredLast || pending.count >= Self.gatherStep : wasEmpty { condition.signal() }
        condition.unlock()
    }

    /// The longest an inline commit may wait for LMDB's write lock before appends go to the
    /// thread for a while: the lock is free unless another process is committing, and a thread of
    /// the cooperative pool must not wait for that again soon.
    static let inlineLockBudget: Duration = .microseconds(500)
    /// The longest a whole inline commit may take before appends go to the thread for a while: a
    /// lone relaxed append commits in tens of microseconds (a few milliseconds under valgrind);
    /// longer, it waited for the disk (the kernel throttles writers when dirty pages pile up).
    static let inlineCommitBudget: Duration = .milliseconds(10)
    /// How long appends go to the thread after an inline commit over a budget.
    static let inlinePause: Duration = .seconds(1)
    /// The largest append committed inline: larger ones are copied by the thread.
    static let inlineBytes = 64 << 10

    /// Commits `request` on the caller's thread when the writer is idle, nothing is queued, the
    /// append is small and its commit will not write the index tail: the write transaction of a
    /// relaxed log (no flush) then takes less than the two thread hops of a hand-off (a wake-up of
    /// the writer and one of a pool thread for the answer). Nil when the request must be queued.
    ///
    /// Ordering is kept: an append goes inline only when no other is queued or in a transaction,
    /// and one that arrives while it runs is queued, then committed by the thread after it.
    private func commitInline(_ request: AppendRequest) -> Result<AppendResult, any Error>? {
        guard request.byteCount <= Self.inlineBytes else { return nil }
        let started = ContinuousClock.now
        condition.lock()
        guard !busy, pending.isEmpty, !stopping, inlineResumesAt.map({ started >= $0 }) ?? true else {
            condition.unlock()
            return nil
        }
        busy = true
        inlineResumesAt = nil
        condition.unlock()
        // Only the holder of `busy` changes the tail. A commit that writes it goes to the thread,
        // and so does one that might wait for another process's write transaction.
        let outcome: Result<AppendResult, any Error>?
        var locked = started
        if tail.withState({ $0.count }) + request.events.count < indexTailLimit, !environment.isOpenInAnotherProcess {
            var batch = [request]
            outcome = process(&batch, beginning: { locked = ContinuousClock.now })[0]
        } else {
            outcome = nil
        }
        let done = ContinuousClock.now
        let overBudget = locked - started > Self.inlineLockBudget || done - started > Self.inlineCommitBudget
        condition.lock()
        busy = false
        if overBudget { inlineResumesAt = done + Self.inlinePause }
        // Appends queued meanwhile wait for the thread, which waits for this commit.
        if !pending.isEmpty || stopping { condition.broadcast() }
        condition.unlock()
        if overBudget {
            metrics.inlinePauses.increment()
            logger.debug(
                "an inline commit took over its budget: appends go to the writer thread for a while",
                metadata: ["path": "\(path)", "lockWaitMicroseconds": "\(nanoseconds(locked - started) / 1000)"])
        }
        guard let outcome else { return nil }
        metrics.inlineCommits.increment()
        metrics.commitDuration.recordNanoseconds(nanoseconds(done - started))
        metrics.appendDuration.recordNanoseconds(nanoseconds(done - started))
        metrics.groupEvents.record(request.events.count)
        return outcome
    }

    /// Finishes the queued requests, then ends the thread. Returns when it has ended.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped { condition.wait() }
        condition.unlock()
    }

    /// Finishes the queued requests, then ends the thread; the caller's task is suspended, not
    /// its thread, until the thread has ended.
    func stopAsync() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            stopping = true
            if stopped {
                condition.unlock()
                continuation.resume()
                return
            }
            stopWaiters.append(continuation)
            condition.broadcast()
            condition.unlock()
        }
    }

    private func run() {
        while true {
            if answeredLast == 1 { spinUnlessAppendersComeBackLate() }
            condition.lock()
            // An inline commit may be running: the thread's turn comes after it.
            while busy || (pending.isEmpty && !stopping) {
                guard flushWhenIdle, !busy else {
                    condition.wait()
                    continue
                }
                let idle = condition.wait(until: Date(timeIntervalSinceNow: Double(nanoseconds(idleIndexFlushDelay)) / 1e9))
                if !idle && !busy && pending.isEmpty && !stopping {
                    // Idle after bulk commits: write their tail now rather than in the next
                    // small commit (or at close).
                    flushWhenIdle = false
                    busy = true
                    condition.unlock()
                    flushIndex()
                    condition.lock()
                    busy = false
                }
            }
            learnWhenAppendersComeBack()
            busy = true
            if pending.isEmpty {
                condition.unlock()
                // A log closed cleanly is indexed through its last record.
                flushIndex()
                condition.lock()
                stopped = true
                let waiters = stopWaiters
                stopWaiters.removeAll()
                condition.broadcast()
                condition.unlock()
                for waiter in waiters { waiter.resume() }
                return
            }
            // The appenders the last commit answered usually append again at once. The group
            // waits a little for them (at most one commit's time, and only while they keep coming)
            // so that they share the next commit with those that queued during the last one,
            // rather than splitting into two half-size groups that take turns. Requests are
            // applied as they arrive, so the wait overlaps the transaction's work.
            let gathering =
                !stopping && answeredLast > 1 && returned < answeredLast
                ? ContinuousClock.now + min(lastCommit, .milliseconds(1)) : nil
            condition.unlock()
            let started = ContinuousClock.now
            let (group, outcomes, flushStarted) = process(gatheringUntil: gathering)
            // Consumed, so that emptying `batch` below releases the requests.
            var batch = consume group
            let done = ContinuousClock.now
            let events = batch.reduce(0) { $0 + $1.events.count }
            // Only the writer thread sets the flag, so it is read here without the lock; the
            // tail's lock is taken only after a bulk commit or while a flush is due.
            let idleFlushDue = (flushWhenIdle || events >= Self.bulkCommitEvents) && tail.withState { $0.count } > indexTailLimit
            condition.lock()
            busy = false
            answeredLast = batch.count
            answeredAlone = batch.count == 1 ? done : nil
            returned = 0
            lastCommit = done - flushStarted
            flushWhenIdle = idleFlushDue
            condition.unlock()
            metrics.commitDuration.recordNanoseconds(nanoseconds(done - started))
            metrics.groupEvents.record(events)
            // The thread lets go of the requests before it resumes their appenders, so that each
            // request (its events, payloads and arrays) is freed by its appender's task, which
            // still holds it, rather than here, between two commits.
            let completions = batch.map { request in
                (request.completion, request.queuedAt.map { done - $0 })
            }
            batch = []
            for ((completion, waited), outcome) in zip(completions, outcomes) {
                if let waited { metrics.appendDuration.recordNanoseconds(nanoseconds(waited)) }
                completion?(outcome)
            }
        }
    }

    /// Spins for the next request (``spinForNextRequest()``) unless the chance is one to skip
    /// (``learnWhenAppendersComeBack()``). A spin that finds nothing burns its 30 µs of a core.
    private func spinUnlessAppendersComeBackLate() {
        spunLast = spinsToSkip == 0
        guard spunLast else {
            spinsToSkip -= 1
            return
        }
        metrics.spins.increment()
        spinForNextRequest()
    }

    /// With the next request queued after a commit that answered one: an appender back within
    /// ``spinNear`` keeps the spin after every such commit; one later than that, after a spin,
    /// skips the next 1, 2, 4, … up to ``maxSpinSkip`` chances. Called with the lock held.
    private func learnWhenAppendersComeBack() {
        guard let answered = answeredAlone, let arrived = pending.first?.queuedAt else { return }
        answeredAlone = nil
        if arrived - answered <= Self.spinNear {
            spinSkip = 0
            spinsToSkip = 0
        } else if spunLast {
            spinSkip = min(max(1, spinSkip * 2), Self.maxSpinSkip)
            spinsToSkip = spinSkip
        }
    }

    /// Looks for a queued request for up to ``spinBudget`` without sleeping.
    ///
    /// A lone appender answered by a commit usually appends again within microseconds. Asleep,
    /// the thread needs a wake-up from it (a futex call and a context switch, over 10 µs on a
    /// virtual machine); spinning, it sees the request at once. On a 2-core virtual machine this
    /// took relaxed single appends from 18–19 k to 25–28 k per second (`hot-paths single`). Only
    /// after a commit that answered one request: with many appenders the thread gathers its group
    /// on the condition instead, and the CPU time is theirs to use.
    private func spinForNextRequest() {
        let deadline = ContinuousClock.now + Self.spinBudget
        var polls = 0
        while queuedCount.load(ordering: .acquiring) == 0 {
            polls &+= 1
            if polls & 255 == 0, ContinuousClock.now >= deadline { return }
        }
    }

    /// Moves the queue's next requests into `batch` while they fit the batch limits beside
    /// `events` and `bytes` (into an empty batch, the first one always); true when it moved any.
    /// Called with the condition's lock held.
    private func takeQueued(events: inout Int, bytes: inout Int, into batch: inout [AppendRequest]) -> Bool {
        var took = false
        while let next = pending.first,
            batch.isEmpty || (events + next.events.count <= maxBatchEvents && bytes + next.byteCount <= maxBatchBytes)
        {
            batch.append(pending.removeFirst())
            events += next.events.count
            bytes += next.byteCount
            took = true
        }
        queuedCount.store(pending.count, ordering: .releasing)
        return took
    }

    /// Waits, until `deadline`, for appenders the last commit answered, and takes what they
    /// queued. False when the group is complete: all came back, the time is up, the batch is full
    /// or the log is closing.
    private func gather(until deadline: ContinuousClock.Instant, events: inout Int, bytes: inout Int, into batch: inout [AppendRequest]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if takeQueued(events: &events, bytes: &bytes, into: &batch) { return true }
            let now = ContinuousClock.now
            guard pending.isEmpty, !stopping, returned < answeredLast, now < deadline else { return false }
            waitingForReturns = true
            _ = condition.wait(until: Date(timeIntervalSinceNow: Double(nanoseconds(deadline - now)) / 1e9))
            waitingForReturns = false
        }
    }

    /// How long the writer waits for the next part of a batch (``AppendRequest/moreFollows``)
    /// before it commits what it has: far longer than a part takes to prepare (about 64 × 5 µs).
    private static let followingWait: Duration = .milliseconds(20)

    /// Waits (at most ``followingWait``) for the next part of a batch whose last request is in
    /// `batch`, and takes what is queued. False when nothing came or the log is closing.
    private func takeFollowing(events: inout Int, bytes: inout Int, into batch: inout [AppendRequest]) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(nanoseconds(Self.followingWait)) / 1e9)
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty && !stopping {
            if !condition.wait(until: deadline) { break }
        }
        return takeQueued(events: &events, bytes: &bytes, into: &batch)
    }

    /// Runs one write transaction: the queued requests, and (until `gatheringUntil`) those that
    /// arrive meanwhile. Returns the requests, each one's outcome, and when the commit began. A
    /// request that fails validation writes nothing and does not hold back the others.
    private func process(
        gatheringUntil deadline: ContinuousClock.Instant?
    ) -> ([AppendRequest], [Result<AppendResult, any Error>], ContinuousClock.Instant) {
        var batch: [AppendRequest] = []
        var events = 0
        var bytes = 0
        condition.lock()
        _ = takeQueued(events: &events, bytes: &bytes, into: &batch)
        condition.unlock()
        var flushStarted = ContinuousClock.now
        let outcomes = process(
            &batch,
            more: { batch in
                if batch.last?.moreFollows == true { return takeFollowing(events: &events, bytes: &bytes, into: &batch) }
                guard let deadline else { return false }
                return gather(until: deadline, events: &events, bytes: &bytes, into: &batch)
            },
            committing: { flushStarted = ContinuousClock.now })
        return (batch, outcomes, flushStarted)
    }

    /// Runs `batch` in one write transaction and returns each request's outcome; `more` may add
    /// requests to the batch (true when it did) before the commit.
    private func process(
        _ batch: inout [AppendRequest], beginning: () -> Void = {}, more: (inout [AppendRequest]) -> Bool = { _ in false },
        committing: () -> Void = {}
    ) -> [Result<AppendResult, any Error>] {
        var outcomes: [Result<AppendResult, any Error>] = []
        var lastPosition: UInt64 = 0
        var committed: UInt64?
        var flushedThrough: UInt64?
        var next: CommittedHead?
        do {
            try environment.write { txn in
                beginning()
                outcomes.removeAll(keepingCapacity: true)
                flushedThrough = nil
                // What this writer's last commit left is what the reads below would find, unless
                // another commit came in between (another process, a metadata write, an index
                // flush): the transaction's id then is not the next one. Taken once: an attempt
                // that does not commit leaves nothing to reuse.
                let id = txn.id
                let known = lastCommitted.flatMap { $0.transactionID &+ 1 == id ? $0 : nil }
                lastCommitted = nil
                var head = try known?.head ?? LogHead.read(txn, records: databases.records, path: path)
                let start = head.position
                committed = start
                // (An attempt that did not commit may have left entries in the tail: `beginWrite`
                // drops them. Nothing is known after such an attempt, so it always runs then.)
                let tailCount = try known != nil ? tail.withState { $0.count } : tail.beginWrite(txn)
                let lastEventID = try known?.lastEventID ?? self.lastEventID(txn)
                repeat {
                    for request in batch[outcomes.count...] {
                        do {
                            outcomes.append(.success(try apply(request, txn: txn, head: &head, lastEventID: lastEventID)))
                        } catch let error as EventLogError {
                            outcomes.append(.failure(error))
                        }
                    }
                } while more(&batch)
                lastPosition = head.position
                let added = Int(head.position - start)
                if tailCount + added >= tailLimit(forCommitOf: added) {
                    try writeIndex(txn, through: head.position)
                    flushedThrough = head.position
                }
                // An index flush adds event ids: the next transaction looks up the greatest again.
                next = CommittedHead(transactionID: id, head: head, lastEventID: flushedThrough == nil ? .some(lastEventID) : nil)
                committing()
            }
            lastCommitted = next
        } catch {
            // The records of the transaction are gone, and so must their entries be.
            if let committed { tail.discardUncommitted(after: committed) }
            if batch.count > 1 && !(error is EventLogError) && !((error as? LMDBError)?.isDiskFull ?? false) {
                // One request may be at fault (e.g. a transaction too large): retry each alone.
                return batch.flatMap { request in
                    var alone = [request]
                    return process(&alone)
                }
            }
            let wrapped = EventLogError.wrapping(error, path: path)
            return batch.map { _ in .failure(wrapped) }
        }
        if let flushedThrough { tail.flushed(through: flushedThrough) }
        onCommit(lastPosition)
        return outcomes
    }
}
