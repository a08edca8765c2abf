//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization
import TestSupport
import Testing

/// One run of the log's crash child, parsed.
struct ChildRun {
    var acknowledged: [CrashTests.Ack] = []
    var failures: [String] = []
    var syncedThrough: UInt64 = 0
    /// Appends acknowledged after the last failure line: the log works again.
    var acknowledgedAfterLastFailure = 0
    /// Whether the child said it opened the log (its `ready` line).
    var ready = false
    /// Whether the child ended by the kill (rather than exiting before it).
    var killed = false

    /// The line from which the kill delay of a run is counted.
    enum ClockStart: Sendable {
        /// The child opened the log.
        case ready
        /// The child acknowledged its first append.
        case firstAcknowledgement
        /// The child synced for the first time (relaxed mode).
        case firstSync

        /// Whether the child said this in `run` so far.
        func reached(in run: ChildRun) -> Bool {
            switch self {
            case .ready: run.ready
            case .firstAcknowledgement: !run.acknowledged.isEmpty
            case .firstSync: run.syncedThrough > 0
            }
        }
    }

    /// How long a run may wait for its clock to start or its condition to hold before it kills
    /// anyway (the test's expectations then report what the child did not do).
    static let safetyDeadline = DispatchTimeInterval.seconds(60)

    /// Starts `log-crash-child` on `path`, lets it work for `milliseconds` counted from the line
    /// `clockStart` names, and then, once `condition` holds for what it printed so far, kills it
    /// with SIGKILL and parses what it said. Counting from a line of the child rather than from its
    /// start keeps a loaded machine's slow process start from eating the window. A small
    /// `indexTailLimit` makes index flushes (commits with many pages to write) frequent.
    static func run(
        path: String, run: Int, writers: Int = 4, mode: String = "durable", indexTailLimit: Int? = nil,
        environment: [String: String], milliseconds: Int, from clockStart: ClockStart = .ready,
        until condition: @escaping @Sendable (ChildRun) -> Bool = { _ in true }
    ) async throws -> ChildRun {
        let process = ChildProcess()
        process.executableURL = builtExecutable("log-crash-child")
        process.arguments = [path, "\(run)", "\(writers)", mode] + (indexTailLimit.map { ["\($0)"] } ?? [])
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        // Waits, kills and reaps on a thread of its own: the tests run on the cooperative pool.
        return try await offThePool {
            try process.run()
            let progress = Mutex(Progress())
            // Signalled for every chunk of lines read, and once at the end of the output.
            let printed = DispatchSemaphore(value: 0)
            // Read while it runs, line by line: a child that writes more than a pipe holds would
            // otherwise wait for the reader instead of appending.
            let reader = output.fileHandleForReading
            Thread.detachNewThread {
                var pending = Data()
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    // read(2) returns what has arrived (FileHandle.read(upToCount:) waits for all of it).
                    let count = read(reader.fileDescriptor, &buffer, buffer.count)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    pending.append(contentsOf: buffer[..<count])
                    guard let lastNewline = pending.lastIndex(of: UInt8(ascii: "\n")) else { continue }
                    let lines = pending[..<lastNewline]
                    progress.withLock { progress in
                        for line in lines.split(separator: UInt8(ascii: "\n")) {
                            progress.run.take(String(decoding: line, as: UTF8.self))
                        }
                    }
                    pending = Data(pending[(lastNewline + 1)...])
                    printed.signal()
                }
                progress.withLock { $0.ended = true }
                printed.signal()
            }
            let deadline = DispatchTime.now() + safetyDeadline
            var killAt: DispatchTime?
            while true {
                let (ended, started, holds) = progress.withLock { progress in
                    (progress.ended, clockStart.reached(in: progress.run), condition(progress.run))
                }
                let now = DispatchTime.now()
                if killAt == nil && started { killAt = now + .milliseconds(milliseconds) }
                if ended { break }
                if let killAt, now >= killAt, holds { break }
                if now >= deadline { break }
                // Until the next lines, the kill time, or the deadline.
                _ = printed.wait(timeout: killAt.map { $0 > now ? min($0, deadline) : deadline } ?? deadline)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            // The pipe closed with the child: the reader's last lines are in.
            // (Bounded: a process started meanwhile by another test may hold the pipe's write end.)
            let drained = DispatchTime.now() + .seconds(10)
            while !progress.withLock({ $0.ended }), DispatchTime.now() < drained { _ = printed.wait(timeout: drained) }
            var result = progress.withLock { $0.run }
            result.killed = process.terminationReason == .uncaughtSignal
            return result
        }
    }

    /// What the reader thread has parsed so far, and whether the child's output ended.
    private struct Progress {
        var run = ChildRun()
        var ended = false
    }

    /// Takes in one line the child printed.
    private mutating func take(_ line: String) {
        let fields = line.split(separator: " ")
        if fields.first == "ack", fields.count == 5, let position = UInt64(fields[1]),
            let id = UUID(uuidString: String(fields[2])), let version = UInt64(fields[4])
        {
            acknowledged.append(CrashTests.Ack(position: position, eventID: id, stream: String(fields[3]), version: version))
            acknowledgedAfterLastFailure += 1
        } else if fields.first == "fail" {
            failures.append(String(line.dropFirst(5)))
            acknowledgedAfterLastFailure = 0
        } else if fields.first == "synced", fields.count == 2, let position = UInt64(fields[1]) {
            syncedThrough = max(syncedThrough, position)
        } else if fields.first == "ready" {
            ready = true
        }
    }
}
