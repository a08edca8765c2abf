//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A one-line progress bar on standard error, redrawn at most a few times a second.
///
/// On a terminal it redraws in place; otherwise (a pipe, a CI log) it prints a line at each
/// quarter, so logs stay short.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let width = 30
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let lock = NSLock()
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var lastQuarter = -1

    init(_ label: String) {
        self.label = label
    }

    func update(_ done: UInt64, of total: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        if isTerminal {
            let now = ContinuousClock.now
            guard done >= total || now - lastDraw >= .milliseconds(100) else {
                return
            }
            lastDraw = now
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            FileHandle.standardError.write(Data("\r\(label) \(bar) \(String(format: "%3.0f", fraction * 100))% \(done)/\(total)".utf8))
        } else {
            let quarter = Int(fraction * 4)
            guard quarter > lastQuarter else {
                return
            }
            lastQuarter = quarter
            FileHandle.standardError.write(Data("\(label) \(quarter * 25)% (\(done)/\(total))\n".utf8))
        }
    }

    func finish() {
        if isTerminal {
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }
}
