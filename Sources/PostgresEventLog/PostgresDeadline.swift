//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Synchronization

extension PostgresEventLog {
    /// Runs `body`, or fails with a clear error once `limit` has passed (the server is down or
    /// unreachable: the connection pool would otherwise wait for it without end). The caller is
    /// answered at the deadline even when `body` does not end at once on cancellation.
    static func withDeadline<T: Sendable>(_ limit: Duration, doing what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = DeadlineRace<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                race.setWork(
                    Task {
                        do {
                            race.finish(.success(try await body()))
                        } catch {
                            race.finish(.failure(error))
                        }
                    })
                race.setTimer(
                    Task {
                        try? await Task.sleep(for: limit)
                        race.finish(.failure(PostgresLogError.server("cannot \(what): no answer from the server within \(limit)")))
                    })
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

/// The first of a body's result, its deadline and its caller's cancellation answers the caller;
/// the others are cancelled.
final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
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

    func setTimer(_ task: Task<Void, Never>) {
        if state.withLock({ state in
            state.timer = task
            return state.done
        }) {
            task.cancel()
        }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, work, timer) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?, Task<Void, Never>?) in
            guard !state.done else { return (nil, nil, nil) }
            state.done = true
            if state.continuation == nil { state.early = result }
            defer { state.continuation = nil }
            return (state.continuation, state.work, state.timer)
        }
        work?.cancel()
        timer?.cancel()
        continuation?.resume(with: result)
    }
}
