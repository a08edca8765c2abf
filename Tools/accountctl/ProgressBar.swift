//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// A one-line progress bar on standard error, redrawn at most a few times a second.
///
/// On a terminal it redraws in place; otherwise (a pipe, a CI log) it prints a line at each
/// quarter, so logs stay short.
final class ProgressBar: Sendable {
    private struct State {
        var lastDraw = ContinuousClock.now - .seconds(1)
        var lastQuarter = -1
    }

    private let label: String
    private let width = 30
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let state = Mutex(State())

    init(_ label: String) {
        self.label = label
    }

    func update(_ done: UInt64, of total: UInt64) {
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let line: String? = state.withLock { state in
            if isTerminal {
                let now = ContinuousClock.now
                guard done >= total || now - state.lastDraw >= .milliseconds(100) else { return nil }
                state.lastDraw = now
                let filled = Int(fraction * Double(width))
                let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
                return "\r\(label) \(bar) \(String(format: "%3.0f", fraction * 100))% \(done)/\(total)"
            }
            let quarter = Int(fraction * 4)
            guard quarter > state.lastQuarter else { return nil }
            state.lastQuarter = quarter
            return "\(label) \(quarter * 25)% (\(done)/\(total))\n"
        }
        if let line { FileHandle.standardError.write(Data(line.utf8)) }
    }

    func finish() {
        if isTerminal {
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }

    /// The number of lines in a file (a newline-terminated last line or not), read in 1 MiB
    /// chunks: the total for a progress bar over the file's lines.
    static func lineCount(of url: URL) throws -> UInt64 {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var count: UInt64 = 0
        var last: UInt8 = 0x0A
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            count += UInt64(chunk.reduce(0) { $1 == 0x0A ? $0 + 1 : $0 })
            last = chunk.last ?? last
        }
        return last == 0x0A ? count : count + 1
    }
}
