//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization

/// Writes whose callers do not wait for them (so that an answer does not tell by its timing
/// whether something was written); ``settle()`` waits for those started so far.
final class BackgroundWrites: Sendable {
    private let running = Mutex<[UInt64: Task<Void, Never>]>([:])
    private let counter = Mutex<UInt64>(0)

    /// Starts `body`; it removes itself from the set when done.
    func start(_ body: @escaping @Sendable () async -> Void) {
        let id = counter.withLock { value -> UInt64 in
            value += 1
            return value
        }
        running.withLock { tasks in
            tasks[id] = Task { [weak self] in
                await body()
                self?.running.withLock { $0[id] = nil }
            }
        }
    }

    /// Waits for every write started before the call.
    func settle() async {
        let tasks = running.withLock { Array($0.values) }
        for task in tasks { await task.value }
    }
}
