//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LogRecordFormat
import Logging
import PostgresNIO
import Synchronization

/// Group commit for this process's appends: the appends that arrive while a group commits go into
/// the next one. Every group's statement first locks the log's one-row head (`SELECT … FOR
/// UPDATE`), which serializes the writers of every server: positions are taken from the head, so
/// they are gap-free and in commit order (a rolled-back group leaves the head as it was).
final class PostgresAppender: Sendable {
    private struct Queued {
        let append: CheckedAppend
        let complete: @Sendable (Result<AppendResult, any Error>) -> Void
    }

    private struct Queue {
        var pending: [Queued] = []
        var draining = false
        var closed = false
        /// Appends queued since the last transaction's appenders were answered.
        var returned = 0
        /// The drain, waiting until `returned` reaches `count` (at most one waits: there is one drain).
        var waiter: ReturnWaiter?
    }

    private struct ReturnWaiter {
        let count: Int
        let id: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    /// Numbers the waits, so that a timer resumes only the wait it was started for.
    private let waits = Atomic<UInt64>(0)

    private let queue = Mutex(Queue())
    /// What this process believes the log holds (nil: nothing yet), kept from one group to the next.
    private let belief = Mutex<AppendSnapshot?>(nil)
    /// How the groups committed so far were decided (for tests and statistics).
    let paths = Mutex(AppendPaths())
    private let client: PostgresClient
    private let location: PostgresLogLocation
    /// The server appends go to (``PostgresLogLocation/server``).
    private let server: String
    private let clock: @Sendable () -> Date
    private let logger: Logger
    private let onCommit: @Sendable (UInt64) -> Void
    private let timeout: Duration
    private let outage: PostgresOutage
    /// The most events one transaction takes.
    private let maxGroupEvents = 4_096

    init(
        client: PostgresClient, location: PostgresLogLocation, clock: @escaping @Sendable () -> Date, logger: Logger, timeout: Duration,
        onCommit: @escaping @Sendable (UInt64) -> Void
    ) {
        self.timeout = timeout
        self.client = client
        self.location = location
        self.server = location.server
        self.clock = clock
        self.logger = logger
        self.onCommit = onCommit
        outage = PostgresOutage(
            "the log at \(location) (appending)", logger: logger, server: server)
    }

    /// Queues the append and returns after the transaction that holds it committed.
    func append(_ append: CheckedAppend) async throws -> AppendResult {
        if lead() { return try await commitAlone(append).get() }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue([append]) { _, outcome in continuation.resume(with: outcome) }
        }
    }

    /// Takes the drain's place when nothing is queued or committing: the append is then committed
    /// by its own task, two task switches fewer than handing it to a drain and back.
    private func lead() -> Bool {
        queue.withLock { queue in
            guard !queue.closed, !queue.draining, queue.pending.isEmpty else { return false }
            queue.draining = true
            return true
        }
    }

    /// Commits one append as a group of its own, then hands what was queued meanwhile to a drain.
    private func commitAlone(_ append: CheckedAppend) async -> Result<AppendResult, any Error> {
        let started = ContinuousClock.now
        let outcome = await commit([append])[0]
        let elapsed = ContinuousClock.now - started
        let more = queue.withLock { queue in
            queue.returned = 0
            if queue.pending.isEmpty { queue.draining = false }
            return queue.draining
        }
        if more { Task { await drain(answered: 1, lastTransaction: elapsed) } }
        return outcome
    }

    /// Queues the appends together, in this order (they share transactions as far as the group
    /// limit allows, each checked on its own), and returns each one's outcome in the same order.
    func appendAll(_ appends: [CheckedAppend]) async -> [Result<AppendResult, any Error>] {
        guard !appends.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let collector = AppendOutcomes(count: appends.count, continuation: continuation)
            enqueue(appends) { index, outcome in collector.set(index, outcome) }
        }
    }

    private func enqueue(_ appends: [CheckedAppend], complete: @escaping @Sendable (Int, Result<AppendResult, any Error>) -> Void) {
        let start = queue.withLock { queue -> Bool? in
            if queue.closed { return nil }
            for (index, append) in appends.enumerated() {
                queue.pending.append(Queued(append: append) { complete(index, $0) })
            }
            queue.returned += appends.count
            defer { queue.draining = true }
            return !queue.draining
        }
        resumeWaiter { $0.returned >= $0.waiter?.count ?? .max }
        switch start {
        case nil:
            for index in appends.indices { complete(index, .failure(EventLogError.closed(path: location.description))) }
        case true?: Task { await drain() }
        case false?: break
        }
    }

    /// Refuses new appends; queued ones still commit.
    func close() {
        queue.withLock { $0.closed = true }
        resumeWaiter { _ in true }
    }

    /// Resumes the waiting drain, if there is one and `when` holds.
    private func resumeWaiter(when: (Queue) -> Bool) {
        let waiter = queue.withLock { queue -> ReturnWaiter? in
            guard queue.waiter != nil, when(queue) else { return nil }
            defer { queue.waiter = nil }
            return queue.waiter
        }
        waiter?.continuation.resume()
    }

    /// Waits until every queued append has been answered.
    func finishQueued() async {
        while queue.withLock({ $0.draining }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func drain(answered: Int = 0, lastTransaction: Duration = .zero) async {
        var answered = answered
        var lastTransaction = lastTransaction
        while true {
            // The appenders the last transaction answered usually append again at once: waiting a
            // little for them (at most half a transaction) lets them share the next one rather
            // than trickle into transactions of one or two.
            if answered > 1 { await waitForReturns(answered, within: min(lastTransaction / 2, .milliseconds(2))) }
            let group = queue.withLock { queue -> [Queued] in
                var count = 0
                var events = 0
                for next in queue.pending {
                    guard count == 0 || events + next.append.events.count <= maxGroupEvents else { break }
                    count += 1
                    events += next.append.events.count
                }
                if count == 0 { queue.draining = false }
                defer { queue.pending.removeFirst(count) }
                return Array(queue.pending.prefix(count))
            }
            if group.isEmpty { return }
            let started = ContinuousClock.now
            let outcomes = await commit(group.map(\.append))
            lastTransaction = ContinuousClock.now - started
            answered = group.count
            queue.withLock { $0.returned = 0 }
            for (queued, outcome) in zip(group, outcomes) { queued.complete(outcome) }
        }
    }

    /// Returns once `count` appends were queued since the last answers, or after `limit`: woken
    /// by the append that reaches the count (or by closing), else by a timer.
    private func waitForReturns(_ count: Int, within limit: Duration) async {
        let id = waits.add(1, ordering: .relaxed).newValue
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = queue.withLock { queue -> Bool in
                if queue.returned >= count || queue.closed { return false }
                queue.waiter = ReturnWaiter(count: count, id: id, continuation: continuation)
                return true
            }
            guard waiting else {
                continuation.resume()
                return
            }
            Task {
                try? await Task.sleep(for: limit)
                self.resumeWaiter { $0.waiter?.id == id }
            }
        }
    }

    /// Commits a group; each append is checked on its own. Usually one round trip: the group is
    /// decided on what this process believes the log holds, and the server writes it only if
    /// those beliefs hold. When they do not (another server appended, or this process has not
    /// seen the streams before) the server's answer corrects them for one more try, and after
    /// that the group takes the locked path, which always decides on what is stored.
    ///
    /// A transient failure (a lost connection, a server restarting or not answering) is retried
    /// with capped exponential backoff and jitter for up to the operation timeout, each try
    /// within ``PostgresTransience/tryLimit(within:)``. A retry of a
    /// group that did commit is answered with its original positions (its event ids are in the
    /// log), so a commit whose answer was lost is reported as done once the server answers again,
    /// not as failed. An outage is logged once when it begins and once, with its duration, at the
    /// first commit after it.
    private func commit(_ appends: [CheckedAppend]) async -> [Result<AppendResult, any Error>] {
        let what = "append to the log at \(location)"
        let started = ContinuousClock.now
        var attempt = 0
        while true {
            attempt += 1
            let tryStarted = ContinuousClock.now
            do {
                let remaining = max(timeout - (ContinuousClock.now - started), .milliseconds(100))
                // Short tries only while the server is known to be out: in normal operation a try
                // has the whole timeout (a big batch on a loaded machine takes its time, and a try
                // given up early keeps its transaction on the server, in the way of its retry).
                let limit = outage.isOngoing ? min(remaining, PostgresTransience.tryLimit(within: timeout, attempt: attempt)) : remaining
                let outcomes = try await commitOnce(appends, within: limit)
                outage.succeeded(tryStarted: tryStarted)
                guard attempt > 1 else { return outcomes }
                // An earlier try of this call may have committed before its answer was lost: the
                // events found in the log are this call's own, not a duplicate of another's.
                return outcomes.map { outcome in
                    outcome.map { AppendResult(positions: $0.positions, streamVersion: $0.streamVersion, wasDuplicate: false) }
                }
            } catch {
                let failure = PostgresFailure.wrap(error, doing: what)
                let wait = PostgresTransience.backoff(attempt: attempt)
                let transient = PostgresTransience.isTransient(failure)
                if transient { outage.failed(failure) }
                guard transient, !Task.isCancelled, ContinuousClock.now - started + wait < timeout else {
                    logger.error(
                        "append transaction failed",
                        metadata: ["error": "\(failure)", "log": "\(location)", "tries": "\(attempt)", "transient": "\(transient)"])
                    return appends.map { _ in .failure(failure) }
                }
                try? await Task.sleep(for: wait)
            }
        }
    }

    /// One try of ``commit(_:)``, within `timeout`: throws what failed.
    private func commitOnce(_ appends: [CheckedAppend], within timeout: Duration) async throws -> [Result<AppendResult, any Error>] {
        let what = "append to the log at \(location)"
        let (client, logger, now, channel) = (client, logger, CheckedAppend.micros(clock()), location.channel)
        let keys = GroupKeys(appends)
        // Taken out while the group commits, so that it is changed in place, never copied.
        var snapshot = belief.withLock { belief in
            defer { belief = nil }
            return belief
        }
        // What a failed try was decided on may be wrong now: the belief stays empty, and the next
        // try starts from the server.
        var decision: GroupDecision?
        for attempt in 0..<2 {
            guard snapshot != nil else { break }
            let candidate = GroupDecision(appends, on: snapshot!, now: now)
            let beliefs = AppendBeliefs(keys, snapshot: snapshot!)
            let report = try await PostgresEventLog.withDeadline(timeout, doing: what, cancellable: false, server: server, on: client) {
                connection in
                try await PostgresAppendStatements.conditionalAppend(candidate, beliefs: beliefs, channel: channel, on: connection, logger: logger)
            }
            guard let report else {
                paths.withLock { paths in
                    if attempt == 0 { paths.believed += 1 } else { paths.corrected += 1 }
                }
                decision = candidate
                break
            }
            snapshot!.learn(report, keys)
        }
        if decision == nil {
            paths.withLock { $0.locked += 1 }
            let (locked, facts) = try await PostgresEventLog.withDeadline(timeout, doing: what, cancellable: false, server: server, on: client) {
                connection in
                try await connection.withTransaction(logger: logger) { connection in
                    let facts = try await PostgresAppendStatements.prepare(keys, on: connection, logger: logger)
                    let decision = GroupDecision(appends, on: facts, now: now)
                    if decision.writes { try await PostgresAppendStatements.write(decision, channel: channel, on: connection, logger: logger) }
                    return (decision, facts)
                }
            }
            if snapshot == nil { snapshot = facts } else { snapshot!.learn(facts, keys) }
            decision = locked
        }
        guard let decision else { throw PostgresLogError.server("no append path decided the group") }
        snapshot!.absorb(decision)
        belief.withLock { [snapshot] in $0 = snapshot }
        if decision.writes { onCommit(decision.head.position) }
        return decision.outcomes
    }
}

/// How many groups committed on each path: in one round trip on this process's beliefs, in two
/// after the server corrected them, or in a transaction that locked the head first.
package struct AppendPaths: Sendable, Equatable {
    package var believed = 0
    package var corrected = 0
    package var locked = 0

    package init(believed: Int = 0, corrected: Int = 0, locked: Int = 0) {
        (self.believed, self.corrected, self.locked) = (believed, corrected, locked)
    }
}

/// A failure of the server or the connection, with the server's own words (postgres-nio keeps
/// them out of its errors' plain descriptions).
struct PostgresFailure: Error, CustomStringConvertible, TransientFailure {
    let description: String
    /// The server or the connection may answer later (``PostgresTransience``).
    let isTransient: Bool

    static func wrap(_ error: any Error, doing what: String) -> EventLogError {
        if let error = error as? EventLogError { return error }
        if let transaction = error as? PostgresTransactionError,
            let inner = transaction.closureError ?? transaction.commitError ?? transaction.beginError
        {
            return wrap(inner, doing: what)
        }
        if let error = error as? PostgresLogError { return .storage(error) }
        let detail: String
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message]
            detail = message.map { "the server said: \($0)" } ?? "\(error.code)" + (error.underlying.map { " (\($0))" } ?? "")
        } else {
            detail = String(describing: error)
        }
        return .storage(PostgresFailure(description: "cannot \(what): \(detail)", isTransient: PostgresTransience.isTransient(error)))
    }
}
