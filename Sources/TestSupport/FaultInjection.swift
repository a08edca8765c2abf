//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

// I/O faults and power loss for tests of code that keeps data in files: the LD_PRELOAD shim in
// Tools/io-fault-shim (see its header for the settings), built on first use, and the undo of the
// writes it journaled, which leaves the files as a power cut would have.
//
// A child process started with `FaultShim.environment(["IOFAULT_FILES": "data.mdb,vault",
// "IOFAULT_POWER_LOSS": "1"])` and killed with SIGKILL, followed by `PowerLoss.strike(directory)`,
// leaves every watched file as it was at its last fdatasync.

/// The I/O fault shim (Tools/io-fault-shim), compiled once per test run with the system's C compiler.
public enum FaultShim {
    /// The path of the built `libiofault.so`.
    public static let library: Result<String, ShimBuildError> = build()

    /// Why the shim could not be built.
    public struct ShimBuildError: Error, CustomStringConvertible {
        /// What the compiler or the system said.
        public let description: String
    }

    private static func build() -> Result<String, ShimBuildError> {
        // The source sits in this package's checkout (SwiftPM builds from source).
        let source = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tools/io-fault-shim/io-fault-shim.c")
        // Beside the test program in the build folder (replaced by each run, never left in /tmp).
        let output = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("io-fault-shim.so")
        let compiler = ChildProcess()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Built under a name of its own, then renamed: a process still running under the last
        // run's library keeps its file.
        let built = output.path + ".\(getpid())"
        compiler.arguments = ["cc", "-shared", "-fPIC", "-O2", "-o", built, source.path, "-ldl"]
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
        guard rename(built, output.path) == 0 else {
            return .failure(ShimBuildError(description: "cannot rename \(built): \(String(cString: strerror(errno)))"))
        }
        return .success(output.path)
    }

    /// The environment of a child process that runs under the shim with `settings`.
    public static func environment(_ settings: [String: String]) throws -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = try library.get()
        environment.merge(settings) { _, new in new }
        return environment
    }
}

/// What a power loss leaves on disk: undoes the writes the shim journaled as not yet flushed.
public enum PowerLoss {
    /// What a strike took away.
    public struct Outcome: Sendable {
        /// Files rolled back.
        public var files = 0
        /// Writes undone.
        public var writesUndone = 0
        /// Bytes put back.
        public var bytesUndone = 0
        /// Nothing undone yet.
        public init() {}
    }

    /// Rolls every watched file under `directory` back to its state at its last flush and removes
    /// the journals. An incomplete last record (the process was killed while writing it) belongs to
    /// a write that had not happened yet and is ignored.
    @discardableResult
    public static func strike(_ directory: String) throws -> Outcome {
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
