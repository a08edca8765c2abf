//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization

/// Wakes subscribers when the log's committed position moves past theirs. Appends in this process
/// publish at once; appends by other processes are noticed by polling the storage while anyone
/// waits (and, where the backend has them, by notifications that publish early). Shared by the
/// backends of this package.
package final class CommitNotifier: Sendable {
    private struct State {
        var committed: UInt64
        var closed = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: (beyond: UInt64, continuation: CheckedContinuation<Void, Never>)] = [:]
        var cancelled: Set<UInt64> = []
        var polling = false
        /// Someone waiting in `untilWaitedFor`, resumed by the next waiter or by closing.
        var arrival: CheckedContinuation<Void, Never>?
    }

    private let state: Mutex<State>
    private let pollInterval: Duration
    private let poll: @Sendable () async -> UInt64?

    package init(committed: UInt64, pollInterval: Duration, poll: @escaping @Sendable () async -> UInt64?) {
        state = Mutex(State(committed: committed))
        self.pollInterval = pollInterval
        self.poll = poll
    }

    package var committed: UInt64 { state.withLock { $0.committed } }

    /// Records a new committed position and wakes everyone waiting below it.
    package func publish(_ position: UInt64) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard position > state.committed else { return [] }
            state.committed = position
            var ready: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters where waiter.beyond < position {
                ready.append(waiter.continuation)
                state.waiters[id] = nil
            }
            return ready
        }
        for waiter in ready { waiter.resume() }
    }

    /// Wakes everyone for good: the log closed.
    package func close() {
        let (all, arrival) = state.withLock { state -> ([CheckedContinuation<Void, Never>], CheckedContinuation<Void, Never>?) in
            state.closed = true
            defer {
                state.waiters.removeAll()
                state.arrival = nil
            }
            return (state.waiters.values.map(\.continuation), state.arrival)
        }
        for waiter in all { waiter.resume() }
        arrival?.resume()
    }

    /// Whether anyone waits for a commit now.
    package var hasWaiters: Bool { state.withLock { !$0.waiters.isEmpty } }

    /// Returns once someone waits for a commit (at once if someone does), or the notifier closes.
    /// One caller at a time: a backend's notification listener, which runs only while it is needed.
    package func untilWaitedFor() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if !state.waiters.isEmpty || state.closed { return true }
                state.arrival = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Returns once the committed position exceeds `position`, the log closes, or the task is cancelled.
    package func wait(beyond position: UInt64) async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (resumeNow, startPolling, arrival) = state.withLock { state -> (Bool, Bool, CheckedContinuation<Void, Never>?) in
                    if state.committed > position || state.closed || state.cancelled.remove(id) != nil {
                        return (true, false, nil)
                    }
                    state.waiters[id] = (position, continuation)
                    defer {
                        state.polling = true
                        state.arrival = nil
                    }
                    return (false, !state.polling, state.arrival)
                }
                if resumeNow { continuation.resume() }
                arrival?.resume()
                if startPolling { startPoller() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter.continuation }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.resume()
        }
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    /// One task per notifier, alive while someone waits: notices appends made by other processes.
    private func startPoller() {
        Task.detached { [self] in
            while true {
                try? await Task.sleep(for: pollInterval)
                let keepGoing = state.withLock { state in
                    if state.waiters.isEmpty || state.closed {
                        state.polling = false
                        return false
                    }
                    return true
                }
                guard keepGoing else { return }
                if let last = await poll() { publish(last) }
            }
        }
    }
}
