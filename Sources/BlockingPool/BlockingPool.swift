//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import DequeModule
import Dispatch
import Foundation
import Synchronization

/// A few threads of their own for work that blocks (password hashing, file flushes, projection
/// commits), so that it never occupies a thread of Swift's cooperative pool. Jobs run in the order
/// they were given, at most `threads` at a time; the rest wait their turn. Shared by this
/// package's targets, not part of the public API.
package final class BlockingPool: Sendable {
    /// Nil asks a thread to end.
    private let jobs = Mutex(Deque<(@Sendable () -> Void)?>())
    private let waiting = DispatchSemaphore(value: 0)
    private let threads: Int

    /// Starts `threads` threads named after `name`.
    package init(threads: Int, name: String) {
        self.threads = threads
        for index in 0..<threads {
            let label = "\(name) \(index + 1)"
            let thread = Thread { [self] in
                Self.nameKernelThread(label)
                while true {
                    waiting.wait()
                    guard let job = jobs.withLock({ $0.popFirst() }), let job else { return }
                    job()
                }
            }
            thread.name = "\(name) \(index + 1)"
            thread.start()
        }
    }

    /// Gives the calling thread `label` (its first 15 bytes) as the name that `top -H`, `ps -L`
    /// and debuggers show. Foundation's `Thread.name` does not reach the kernel on Linux, and a
    /// new thread otherwise keeps the name of the thread that started it.
    package static func nameKernelThread(_ label: String) {
        #if os(Linux)
            guard let file = FileHandle(forWritingAtPath: "/proc/thread-self/comm") else { return }
            file.write(Data(label.utf8.prefix(15)))
            try? file.close()
        #endif
    }

    /// Runs `body` on one of the pool's threads and returns (or throws) what it did.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Queues `job` to run on one of the pool's threads and returns at once.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        waiting.signal()
    }

    /// Ends the threads once the jobs given before have run.
    package func shutdown() {
        jobs.withLock { jobs in
            for _ in 0..<threads { jobs.append(nil) }
        }
        for _ in 0..<threads { waiting.signal() }
    }
}
