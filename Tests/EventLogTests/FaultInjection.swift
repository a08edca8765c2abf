//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Testing

/// The I/O fault shim (Tools/io-fault-shim), compiled once per test run with the system's C compiler.
enum FaultShim {
    /// The path of the built `libiofault.so`.
    static let library: Result<String, ShimBuildError> = build()

    struct ShimBuildError: Error, CustomStringConvertible {
        let description: String
    }

    private static func build() -> Result<String, ShimBuildError> {
        let source = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tools/io-fault-shim/io-fault-shim.c")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("iofault-\(UUID().uuidString).so")
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-shared", "-fPIC", "-O2", "-o", output.path, source.path, "-ldl"]
        let errors = Pipe()
        compiler.standardError = errors
        do {
            try compiler.run()
            compiler.waitUntilExit()
        } catch {
            return .failure(ShimBuildError(description: "cannot run cc: \(error)"))
        }
        guard compiler.terminationStatus == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return .failure(ShimBuildError(description: "cc failed: \(message)"))
        }
        return .success(output.path)
    }

    /// The environment of a child process that runs under the shim with `settings`.
    static func environment(_ settings: [String: String]) throws -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = try library.get()
        environment.merge(settings) { _, new in new }
        return environment
    }
}

/// What a power loss leaves on disk: undoes the writes the shim journaled as not yet flushed.
enum PowerLoss {
    struct Outcome {
        var files = 0
        var writesUndone = 0
        var bytesUndone = 0
    }

    /// Rolls every watched file under `directory` back to its state at its last flush and removes
    /// the journals. An incomplete last record (the process was killed while writing it) belongs to
    /// a write that had not happened yet and is ignored.
    @discardableResult
    static func strike(_ directory: String) throws -> Outcome {
        var outcome = Outcome()
        let names = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.hasSuffix(".unsynced") }
        for name in names {
            let journalPath = (directory as NSString).appendingPathComponent(name)
            let dataPath = String(journalPath.dropLast(".unsynced".count))
            let journal = try Data(contentsOf: URL(fileURLWithPath: journalPath))
            var records: [(offset: UInt64, bytes: Data, sizeBefore: UInt64)] = []
            var cursor = journal.startIndex
            while journal.endIndex - cursor >= 24 {
                let header = journal[cursor..<cursor + 24].withUnsafeBytes { raw in
                    (0..<3).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
                }
                let length = Int(header[1])
                guard journal.endIndex - (cursor + 24) >= length else { break }
                records.append((header[0], journal[cursor + 24..<cursor + 24 + length], header[2]))
                cursor += 24 + length
            }
            try FileManager.default.removeItem(atPath: journalPath)
            guard let first = records.first else { continue }
            let file = try FileHandle(forUpdating: URL(fileURLWithPath: dataPath))
            for record in records.reversed() where !record.bytes.isEmpty {
                try file.seek(toOffset: record.offset)
                try file.write(contentsOf: record.bytes)
                outcome.bytesUndone += record.bytes.count
            }
            try file.truncate(atOffset: first.sizeBefore)
            try file.close()
            outcome.files += 1
            outcome.writesUndone += records.count
        }
        return outcome
    }
}

/// One run of the log's crash child, parsed.
struct ChildRun {
    var acknowledged: [CrashTests.Ack] = []
    var failures: [String] = []
    var syncedThrough: UInt64 = 0
    /// Appends acknowledged after the last failure line: the log works again.
    var acknowledgedAfterLastFailure = 0

    /// Starts `log-crash-child` on `path`, lets it work for `milliseconds`, kills it with SIGKILL
    /// and parses what it said.
    static func run(path: String, run: Int, writers: Int = 4, mode: String = "durable",
                    environment: [String: String], milliseconds: Int) async throws -> ChildRun {
        let process = Process()
        process.executableURL = builtExecutable("log-crash-child")
        process.arguments = [path, "\(run)", "\(writers)", mode]
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .milliseconds(milliseconds))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        var result = ChildRun()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.first == "ack", fields.count == 5, let position = UInt64(fields[1]),
               let id = UUID(uuidString: String(fields[2])), let version = UInt64(fields[4]) {
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
