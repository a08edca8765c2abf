//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Logging
import Synchronization

/// The lines a server logged, kept in memory: a swift-log handler for a test's own `Logger`
/// (no global bootstrap, so tests running beside it log as before).
final class CapturedLog: Sendable {
    /// One logged line: its level, message and metadata (the logger's and the line's, rendered).
    struct Line: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]
    }

    private let stored = Mutex<[Line]>([])

    /// Every line so far, in order.
    var lines: [Line] { stored.withLock { $0 } }

    /// A logger whose lines (at `level` and above) end up here.
    func logger(label: String = "captured", level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: label) { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func append(_ line: Line) {
        stored.withLock { $0.append(line) }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, line in line }
            log.append(Line(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }
}
