//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import PostgresNIO
import Synchronization

extension PostgresEventLog {
    /// Runs `body`, or fails with a clear error once `limit` has passed (the server is down or
    /// unreachable: the connection pool would otherwise wait for it without end). The caller is
    /// answered at the deadline even when `body` does not end at once on cancellation; a result
    /// the body returns after that is dropped, so a body that opens something closes it itself. With
    /// `cancellable` false, cancelling the calling task does not answer early (an append that
    /// was sent is answered with its outcome).
    ///
    /// `server` names the server the body talks to (``PostgresLogLocation/server``): when an outage of it begins, the deadlines of
    /// its operations under way are brought forward (``DeadlineWatch/shorten(owner:to:)``).
    package static func withDeadline<T: Sendable>(
        _ limit: Duration, doing what: @autoclosure @escaping @Sendable () -> String, cancellable: Bool = true,
        server: String? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await racing(limit, doing: what(), cancellable: cancellable, server: server) { _ in try await body() }
    }

    /// ``withDeadline(_:doing:cancellable:server:_:)`` with a connection leased from `client` for
    /// `body`: the operation is also answered, at once and with a transient failure, when that
    /// connection closes before `body` ends (`ClosedConnectionWatch`). Every statement of the log
    /// runs this way.
    package static func withDeadline<T: Sendable>(
        _ limit: Duration, doing what: @autoclosure @escaping @Sendable () -> String, cancellable: Bool = true,
        server: String? = nil, on client: PostgresClient, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await racing(limit, doing: what(), cancellable: cancellable, server: server) { race in
            try await client.withConnection { connection in
                try await connection.whileOpen(abandon: { race.finish(.failure($0)) }) { try await body(connection) }
            }
        }
    }

    /// The body of both: `body` gets the race, which it may end early.
    private static func racing<T: Sendable>(
        _ limit: Duration, doing what: @autoclosure @escaping @Sendable () -> String, cancellable: Bool,
        server: String?, _ body: @escaping @Sendable (DeadlineRace<T>) async throws -> T
    ) async throws -> T {
        let race = DeadlineRace<T>()
        let started = ContinuousClock.now
        let ticket = DeadlineWatch.shared.add(started + limit, owner: server) {
            // The deadline may have been brought forward: the message says how long it waited.
            let waited = PostgresOutage.seconds(.now - started)
            race.finish(.failure(PostgresLogError.server("cannot \(what()): no answer from the server within \(waited)")))
        }
        let run = {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                race.setWork(
                    Task {
                        do {
                            race.finish(.success(try await body(race)))
                        } catch {
                            race.finish(.failure(error))
                        }
                    })
            }
        }
        let outcome: Result<T, any Error>
        do {
            if cancellable {
                outcome = .success(try await withTaskCancellationHandler(operation: run) { race.finish(.failure(CancellationError())) })
            } else {
                outcome = .success(try await run())
            }
        } catch {
            outcome = .failure(error)
        }
        DeadlineWatch.shared.remove(ticket)
        return try outcome.get()
    }
}

/// The first of a body's result, its deadline and its caller's cancellation answers the caller;
/// the body's task is cancelled when it did not answer.
final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var work: Task<Void, Never>?
        var done = false
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func setWork(_ task: Task<Void, Never>) {
        if state.withLock({ state in
            state.work = task
            return state.done
        }) {
            task.cancel()
        }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, work) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?) in
            guard !state.done else { return (nil, nil) }
            state.done = true
            if state.continuation == nil { state.early = result }
            defer { state.continuation = nil }
            return (state.continuation, state.work)
        }
        if case .failure = result { work?.cancel() }
        continuation?.resume(with: result)
    }
}

/// Ends the operations whose deadline has passed. One task for the process does it, waking every
/// `tick` while any operation is registered and stopping a second after the last one left: a
/// timer task for each operation cost two task switches per append.
package final class DeadlineWatch: Sendable {
    static let shared = DeadlineWatch(tick: .milliseconds(50))

    private struct Entry {
        var deadline: ContinuousClock.Instant
        let owner: String?
        let expire: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var lastID: UInt64 = 0
        var watching = false
        /// Ticks since the last entry left.
        var idleTicks = 0
    }

    private let state = Mutex(State())
    private let tick: Duration

    package init(tick: Duration) {
        self.tick = tick
    }

    /// Calls `expire` once `deadline` has passed, unless the returned ticket is removed first.
    package func add(_ deadline: ContinuousClock.Instant, owner: String? = nil, expire: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, start) = state.withLock { state in
            state.lastID += 1
            state.entries[state.lastID] = Entry(deadline: deadline, owner: owner, expire: expire)
            state.idleTicks = 0
            defer { state.watching = true }
            return (state.lastID, !state.watching)
        }
        if start { Task { await self.watch() } }
        return id
    }

    /// Brings the deadlines of `owner`'s operations under way forward to `latest` (those due
    /// later) and returns how many it moved. Called when an outage of the server begins: a request
    /// sent before the crash whose connection neither answers nor closes would otherwise hold
    /// its caller (and, for an append, the appender) for the whole operation timeout, while a
    /// retry on a new connection succeeds as soon as the server is back.
    @discardableResult
    package func shorten(owner: String, to latest: ContinuousClock.Instant) -> Int {
        state.withLock { state in
            var moved = 0
            for (id, entry) in state.entries where entry.owner == owner && entry.deadline > latest {
                state.entries[id]!.deadline = latest
                moved += 1
            }
            return moved
        }
    }

    package func remove(_ id: UInt64) {
        state.withLock { _ = $0.entries.removeValue(forKey: id) }
    }

    private func watch() async {
        let idleLimit = max(Int(Duration.seconds(1) / tick), 1)
        while true {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let expired = state.withLock { state -> [Entry]? in
                if state.entries.isEmpty {
                    state.idleTicks += 1
                    if state.idleTicks < idleLimit { return [] }
                    state.watching = false
                    return nil
                }
                let due = state.entries.filter { $0.value.deadline <= now }
                for id in due.keys { state.entries[id] = nil }
                return Array(due.values)
            }
            guard let expired else { return }
            for entry in expired { entry.expire() }
        }
    }
}
