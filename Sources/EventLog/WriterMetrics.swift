//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Metrics
import Synchronization

/// What the writer reports through swift-metrics (no backend is bundled: bootstrap the one you
/// run). Every metric carries the log's folder as the dimension `log`.
struct WriterMetrics {
    /// From queueing an append to its commit being done (flushed, when durable), per append.
    let appendDuration: Metrics.Timer
    /// One write transaction with its commit (and `fdatasync`, when durable), per group.
    let commitDuration: Metrics.Timer
    /// Events per commit: how well group commit groups.
    let groupEvents: Recorder

    init(path: String) {
        let dimensions = [("log", path)]
        appendDuration = Metrics.Timer(label: "eventlog_append_duration", dimensions: dimensions)
        commitDuration = Metrics.Timer(label: "eventlog_commit_duration", dimensions: dimensions)
        groupEvents = Recorder(label: "eventlog_commit_events", dimensions: dimensions)
    }
}

func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}

/// Gathers the outcomes of requests queued together and resumes their caller once all are in.
final class OutcomeCollector: Sendable {
    private let state: Mutex<(outcomes: [Result<AppendResult, any Error>?], remaining: Int)>
    private let continuation: CheckedContinuation<[Result<AppendResult, any Error>], Never>

    init(count: Int, continuation: CheckedContinuation<[Result<AppendResult, any Error>], Never>) {
        state = Mutex((Array(repeating: nil, count: count), count))
        self.continuation = continuation
    }

    func set(_ index: Int, _ outcome: Result<AppendResult, any Error>) {
        let finished = state.withLock { state -> [Result<AppendResult, any Error>]? in
            state.outcomes[index] = outcome
            state.remaining -= 1
            return state.remaining == 0 ? state.outcomes.map { $0! } : nil
        }
        if let finished { continuation.resume(returning: finished) }
    }
}
