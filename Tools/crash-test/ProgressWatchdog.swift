//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// Ends the run with a clear error when a step of a round makes no progress for `limit`, instead
/// of letting it hang: a child that acknowledges nothing, a child that does not end after its
/// SIGKILL, or the harness's own check of the store (opening it, waiting for the details cache, a
/// rebuild, the comparisons). Each step names itself (and the child it waits for), and work that
/// goes on restarts the clock; the error names the step, kills the children and exits with status 2.
///
/// It watches from a thread of its own, so that a step that blocks a thread, or waits for a
/// continuation never resumed, is caught as well.
final class ProgressWatchdog: Sendable {
    private struct Step {
        /// Nil between runs of steps (``end()``).
        var what: String?
        var since: ContinuousClock.Instant
        var children: [pid_t]
    }

    /// The exit status of a run that stopped making progress.
    static let exitStatus: Int32 = 2

    let limit: Duration
    private let step = Mutex(Step(what: "starting", since: .now, children: []))

    init(limit: Duration) {
        self.limit = limit
        Thread.detachNewThread { [self] in patrol() }
    }

    /// Starts the clock of a new step; `what` says what it waits for in the error.
    func begin(_ what: String) {
        step.withLock { step in
            step.what = what
            step.since = .now
        }
    }

    /// The current step goes on (a record applied, an account compared): restarts its clock.
    func progressed() {
        step.withLock { $0.since = .now }
    }

    /// No step runs any more (the rounds are over).
    func end() {
        step.withLock { $0.what = nil }
    }

    /// The children to kill when the run is stopped.
    func watch(children: [pid_t]) {
        step.withLock { $0.children = children }
    }

    private func patrol() -> Never {
        while true {
            usleep(250_000)
            let stalled = step.withLock { step in step.what != nil && ContinuousClock.now - step.since > limit ? step : nil }
            guard let stalled, let what = stalled.what else { continue }
            for child in stalled.children { kill(child, SIGKILL) }
            let seconds = limit.components.seconds
            FileHandle.standardError.write(Data("crash-test: no progress for \(seconds) s: \(what); run stopped\n".utf8))
            exit(Self.exitStatus)
        }
    }
}
