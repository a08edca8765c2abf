//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import Testing

/// One run of the log's crash child, parsed.
struct ChildRun {
    var acknowledged: [CrashTests.Ack] = []
    var failures: [String] = []
    var syncedThrough: UInt64 = 0
    /// Appends acknowledged after the last failure line: the log works again.
    var acknowledgedAfterLastFailure = 0
    /// Whether the child ended by the kill (rather than exiting before it).
    var killed = false

    /// Starts `log-crash-child` on `path`, lets it work for `milliseconds`, kills it with SIGKILL
    /// and parses what it said. A small `indexTailLimit` makes index flushes (commits with many
    /// pages to write) frequent.
    static func run(
        path: String, run: Int, writers: Int = 4, mode: String = "durable", indexTailLimit: Int? = nil,
        environment: [String: String], milliseconds: Int
    ) async throws -> ChildRun {
        let process = Process()
        process.executableURL = builtExecutable("log-crash-child")
        process.arguments = [path, "\(run)", "\(writers)", mode] + (indexTailLimit.map { ["\($0)"] } ?? [])
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Read while it runs: a child that writes more than a pipe holds would otherwise wait
        // for the reader instead of appending.
        let reader = output.fileHandleForReading
        async let printed = offThePool { reader.readDataToEndOfFile() }
        try await Task.sleep(for: .milliseconds(milliseconds))
        kill(process.processIdentifier, SIGKILL)
        try await offThePool { process.waitUntilExit() }
        var result = ChildRun()
        result.killed = process.terminationReason == .uncaughtSignal
        let text = String(decoding: try await printed, as: UTF8.self)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.first == "ack", fields.count == 5, let position = UInt64(fields[1]),
                let id = UUID(uuidString: String(fields[2])), let version = UInt64(fields[4])
            {
                result.acknowledged.append(CrashTests.Ack(position: position, eventID: id, stream: String(fields[3]), version: version))
                result.acknowledgedAfterLastFailure += 1
            } else if fields.first == "fail" {
                result.failures.append(String(line.dropFirst(5)))
                result.acknowledgedAfterLastFailure = 0
            } else if fields.first == "synced", fields.count == 2, let position = UInt64(fields[1]) {
                result.syncedThrough = max(result.syncedThrough, position)
            }
        }
        return result
    }
}
