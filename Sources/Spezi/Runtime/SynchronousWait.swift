//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Dispatch
import Synchronization

/// Runs the runtime's asynchronous work to its end from synchronous code, for the synchronous
/// spellings upstream has (``Spezi/Spezi``, `SpeziTesting`'s `withDependencyResolution`) where
/// loading here awaits ``Module/configure()``.
///
/// The work runs as a task that prefers an executor whose jobs the waiting thread itself runs, so
/// it needs no other thread: not one of Swift's cooperative pool, which callers blocked here could
/// exhaust, nor one that dispatch would add only after noticing the stall. What the work must do on
/// an actor the waiting caller holds cannot run (a module whose `configure()` is isolated to the
/// main actor, while the main actor waits here).
enum SynchronousWait {
    /// Runs `work` and returns once it has finished, throwing what it threw.
    ///
    /// - Parameter work: the work; it may use values the caller does not touch until this returns.
    /// - Throws: the error of `work`.
    static func run(_ work: @escaping @Sendable () async throws(SpeziError) -> Void) throws(SpeziError) {
        let executor = CallerTaskExecutor()
        let failure = Mutex<SpeziError?>(nil)
        Task.detached(executorPreference: executor) {
            do throws(SpeziError) {
                try await work()
            } catch {
                failure.withLock { $0 = error }
            }
            executor.finish()
        }
        executor.runUntilFinished()
        if let error = failure.withLock({ $0 }) {
            throw error
        }
    }
}

/// A task executor whose jobs the thread calling ``runUntilFinished()`` runs, until ``finish()``.
/// Jobs that arrive later (a task that kept the preference and outlived the work) go to dispatch.
final class CallerTaskExecutor: TaskExecutor {
    private struct State {
        var jobs: [UnownedJob] = []
        var draining = true
    }

    private let state = Mutex(State())
    /// Signalled once for every job queued, after queueing it, and once by ``finish()``: a wake
    /// that finds no job left is the one of ``finish()``.
    private let wake = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = state.withLock { state in
            guard state.draining else {
                return false
            }
            state.jobs.append(job)
            return true
        }
        if queued {
            wake.signal()
        } else {
            DispatchQueue.global().async {
                job.runSynchronously(on: self.asUnownedTaskExecutor())
            }
        }
    }

    /// Ends ``runUntilFinished()`` once the jobs queued so far have run.
    func finish() {
        wake.signal()
    }

    /// Runs the jobs on the calling thread, in the order they arrive, until ``finish()``.
    func runUntilFinished() {
        while true {
            wake.wait()
            let next = state.withLock { state -> UnownedJob? in
                guard !state.jobs.isEmpty else {
                    state.draining = false
                    return nil
                }
                return state.jobs.removeFirst()
            }
            guard let next else {
                return
            }
            next.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Hands a value that is not `Sendable` (the runtime, modules) to the task of ``SynchronousWait``.
// Unchecked Sendable: the caller that made it waits, without touching the value, until the task
// that uses it has finished.
struct WaitingHandOver<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
