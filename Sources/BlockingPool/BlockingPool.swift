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
    /// The jobs not yet taken by a thread, and whether the pool was shut down; a nil job asks a
    /// thread to end.
    private struct Queue {
        var jobs = Deque<(@Sendable () -> Void)?>()
        var isShutDown = false
    }

    private let queue = Mutex(Queue())
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
                    guard let job = queue.withLock({ $0.jobs.popFirst() }), let job else { return }
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
    ///
    /// - Throws: ``BlockingPoolError/shutDown`` without running `body` when the pool was shut
    ///   down; else what `body` throws.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try submit { continuation.resume(with: Result { try body() }) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// Queues `job` to run on one of the pool's threads and returns at once.
    ///
    /// - Throws: ``BlockingPoolError/shutDown`` when the pool was shut down: `job` never runs.
    package func submit(_ job: @escaping @Sendable () -> Void) throws(BlockingPoolError) {
        try queue.withLock { queue throws(BlockingPoolError) in
            guard !queue.isShutDown else { throw .shutDown }
            queue.jobs.append(job)
        }
        waiting.signal()
    }

    /// Ends the threads once the jobs given before have run; work given after it is refused
    /// (``BlockingPoolError/shutDown``). A second call does nothing.
    package func shutdown() {
        let first = queue.withLock { queue in
            guard !queue.isShutDown else { return false }
            queue.isShutDown = true
            for _ in 0..<threads { queue.jobs.append(nil) }
            return true
        }
        guard first else { return }
        for _ in 0..<threads { waiting.signal() }
    }
}

/// Why a ``BlockingPool`` did not take a job.
package enum BlockingPoolError: Error, Equatable, CustomStringConvertible {
    /// The pool was shut down before the job was given.
    case shutDown

    package var description: String { "the thread pool was shut down" }
}
