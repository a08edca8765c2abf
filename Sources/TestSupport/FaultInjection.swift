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
    /// What a strike changed on disk, measured on the files' bytes before and after the undo, not
    /// taken from the journals: an undo that wrote nothing back, or wrote back what was already
    /// there, changes nothing.
    public struct Outcome: Sendable {
        /// The journals read: watched files written to since their last flush.
        public var journals = 0
        /// The writes the journals held (what the shim recorded, not what the undo changed).
        public var journaledWrites = 0
        /// The files whose bytes after the undo differ from their bytes before it.
        public var filesChanged = 0
        /// The bytes that differ: in the ranges written back, plus those the truncation removed
        /// (or added).
        public var bytesChanged = 0
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
            outcome.journals += 1
            outcome.journaledWrites += records.count
            guard let first = records.first else { continue }
            let file = try FileHandle(forUpdating: URL(fileURLWithPath: dataPath))
            defer { try? file.close() }
            let sizeBefore = try file.seekToEnd()
            let sizeAfter = first.sizeBefore
            // The ranges the undo writes back, within the part of the file it keeps: their bytes
            // are compared. The rest of a range lies in the part the truncation removes.
            let kept = min(sizeBefore, sizeAfter)
            let ranges = merged(records.map { ($0.offset, $0.offset + UInt64($0.bytes.count)) }, below: kept)
            let before = try ranges.map { try read(file, $0) }
            for record in records.reversed() where !record.bytes.isEmpty {
                try file.seek(toOffset: record.offset)
                try file.write(contentsOf: record.bytes)
            }
            try file.truncate(atOffset: sizeAfter)
            var changed = Int(max(sizeBefore, sizeAfter) - kept)
            for (range, old) in zip(ranges, before) {
                let new = try read(file, range)
                changed += differing(old, new)
            }
            outcome.bytesChanged += changed
            if changed > 0 { outcome.filesChanged += 1 }
        }
        return outcome
    }

    /// The ranges, cut off at `limit`, sorted and with overlapping or adjacent ones joined.
    private static func merged(_ ranges: [(UInt64, UInt64)], below limit: UInt64) -> [Range<UInt64>] {
        var result: [Range<UInt64>] = []
        for (start, end) in ranges.map({ ($0.0, min($0.1, limit)) }).filter({ $0.0 < $0.1 }).sorted(by: { $0.0 < $1.0 }) {
            if let last = result.last, start <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, end)
            } else {
                result.append(start..<end)
            }
        }
        return result
    }

    /// How many bytes of `a` and `b` differ (a byte one of them lacks counts too).
    private static func differing(_ a: Data, _ b: Data) -> Int {
        a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                var count = abs(a.count - b.count)
                var start = 0
                let common = min(a.count, b.count)
                while start < common {
                    // Page by page: most pages the undo writes back differ, and equal ones are skipped whole.
                    let end = min(start + 4_096, common)
                    if memcmp(a.baseAddress! + start, b.baseAddress! + start, end - start) != 0 {
                        for index in start..<end where a[index] != b[index] { count += 1 }
                    }
                    start = end
                }
                return count
            }
        }
    }

    private static func read(_ file: FileHandle, _ range: Range<UInt64>) throws -> Data {
        try file.seek(toOffset: range.lowerBound)
        return try file.read(upToCount: Int(range.count)) ?? Data()
    }
}
