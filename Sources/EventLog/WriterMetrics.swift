//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Metrics

/// What the writer reports through swift-metrics (no backend is bundled: bootstrap the one you
/// run). Every metric carries the log's folder as the dimension `log`.
struct WriterMetrics {
    /// From queueing an append to its commit being done (flushed, when durable), per append.
    let appendDuration: Metrics.Timer
    /// One write transaction with its commit (and `fdatasync`, when durable), per group.
    let commitDuration: Metrics.Timer
    /// Events per commit: how well group commit groups.
    let groupEvents: Recorder
    /// Appends committed on the appender's own thread (a relaxed log's lone writer), not queued.
    let inlineCommits: Counter
    /// Inline commits that took over their budget (waited for the write lock or the disk): each
    /// sends the appends of the next second to the writer thread.
    let inlinePauses: Counter
    /// Spins of the writer thread for the next request after a commit that answered one (it
    /// skips them for a while after appenders came back late).
    let spins: Counter

    init(path: String) {
        let dimensions = [("log", path)]
        appendDuration = Metrics.Timer(label: "eventlog_append_duration", dimensions: dimensions)
        commitDuration = Metrics.Timer(label: "eventlog_commit_duration", dimensions: dimensions)
        groupEvents = Recorder(label: "eventlog_commit_events", dimensions: dimensions)
        inlineCommits = Counter(label: "eventlog_inline_commits", dimensions: dimensions)
        inlinePauses = Counter(label: "eventlog_inline_pauses", dimensions: dimensions)
        spins = Counter(label: "eventlog_writer_spins", dimensions: dimensions)
    }
}

func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}
