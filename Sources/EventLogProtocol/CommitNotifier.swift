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
        let all = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return state.waiters.values.map(\.continuation)
        }
        for waiter in all { waiter.resume() }
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
                let (resumeNow, startPolling) = state.withLock { state -> (Bool, Bool) in
                    if state.committed > position || state.closed || state.cancelled.remove(id) != nil {
                        return (true, false)
                    }
                    state.waiters[id] = (position, continuation)
                    defer { state.polling = true }
                    return (false, !state.polling)
                }
                if resumeNow { continuation.resume() }
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
