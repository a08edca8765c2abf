//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization

/// Gathers the outcomes of appends queued together (a batch) and resumes their caller once all
/// are in, in the order they were queued. Shared by the backends of this package.
package final class AppendOutcomes: Sendable {
    private let state: Mutex<(outcomes: [Result<AppendResult, any Error>?], remaining: Int)>
    private let continuation: CheckedContinuation<[Result<AppendResult, any Error>], Never>

    /// Waits for `count` outcomes, then resumes `continuation` with them.
    package init(count: Int, continuation: CheckedContinuation<[Result<AppendResult, any Error>], Never>) {
        state = Mutex((Array(repeating: nil, count: count), count))
        self.continuation = continuation
    }

    /// Records the outcome of the append queued at `index`.
    package func set(_ index: Int, _ outcome: Result<AppendResult, any Error>) {
        let finished = state.withLock { state -> [Result<AppendResult, any Error>]? in
            state.outcomes[index] = outcome
            state.remaining -= 1
            return state.remaining == 0 ? state.outcomes.map { $0! } : nil
        }
        if let finished { continuation.resume(returning: finished) }
    }
}
