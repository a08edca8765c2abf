//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import TestSupport
import TestTiers
import Testing

@Suite("Crash safety", .timeLimit(.minutes(5)), .integration)
struct CrashTests {
    struct Ack: Hashable {
        let position: UInt64
        let eventID: UUID
        let stream: String
        let version: UInt64
    }

    @Test("SIGKILL at random moments, 20 times: every acknowledged append survives and verify passes")
    func killedWriters() async throws {
        let directory = TemporaryDirectory("crash")
        defer { directory.cleanup() }
        let path = directory.path("log")
        let executable = builtExecutable("log-crash-child")
        try #require(FileManager.default.isExecutableFile(atPath: executable.path), "build the log-crash-child target first")
        var generator = SplitMix64(seed: 0x5EED_C0DE)
        var acknowledged: [Ack] = []
        var crashes = 0
        var tailsAfterCrash = 0
        var wroteBeforeKill = 0
        for run in 0..<20 {
            // Let it append for a random while from its first acknowledged append (a slow start on
            // a busy machine does not eat the window), then kill it without warning. A small index
            // tail: index flushes happen between kills, and kills land in the middle of them.
            let child = try await ChildRun.run(
                path: path, run: run, writers: 4, mode: "durable", indexTailLimit: 29, environment: ProcessInfo.processInfo.environment,
                milliseconds: 20 + Int(generator.next() % 200), from: .firstAcknowledgement)
            #expect(child.killed, "run \(run) ended before the kill")
            #expect(child.failures.isEmpty, "\(child.failures.prefix(3))")
            // Only a run the kill ended counts as a crash.
            if child.killed { crashes += 1 }
            acknowledged += child.acknowledged

            let log = try EventLog(path: path)
            _ = try await Self.expectSurvived(acknowledged, in: log, after: "run \(run)")
            // A child killed before its first commit (only at the safety deadline) cannot leave a tail.
            if !child.acknowledged.isEmpty {
                wroteBeforeKill += 1
                if try log.indexedThrough() < log.lastPosition() { tailsAfterCrash += 1 }
            }
            await log.close()
        }
        #expect(crashes == 20)
        // Crashes of a child that had committed left records the indexes did not hold yet, and the
        // reopened log found each by its id (expectSurvived): the rebuilt tail was exercised. A
        // count, not a share of the kills: how many land inside a tail depends on how many events
        // a commit groups, which depends on the machine's speed.
        #expect(tailsAfterCrash >= 3, "\(tailsAfterCrash) tails after \(wroteBeforeKill) kills")
        // The runs must have done real work for the test to mean anything.
        #expect(acknowledged.count > 100)
        #expect(Set(acknowledged.map(\.position)).count == acknowledged.count)
    }

    /// After a crash: every acknowledged event is at its position with its stream and version and
    /// is found by its id (through the indexes and the tail the crash left unindexed), each
    /// stream is gap-free up to at least its last acknowledged version, and the chain verifies.
    /// Returns each acknowledged stream's stored version.
    static func expectSurvived(_ acknowledged: [Ack], in log: EventLog, after crash: String) async throws -> [String: UInt64] {
        var lastVersions: [String: UInt64] = [:]
        for ack in acknowledged {
            let record = try log.record(at: ack.position)
            #expect(record?.eventID == ack.eventID, "acknowledged event at \(ack.position) after \(crash)")
            #expect(record?.streamID == ack.stream)
            #expect(record?.streamVersion == ack.version)
            #expect(try log.position(ofEvent: ack.eventID) == ack.position, "after \(crash)")
            lastVersions[ack.stream] = max(lastVersions[ack.stream] ?? 0, ack.version)
        }
        var stored: [String: UInt64] = [:]
        for (stream, version) in lastVersions {
            // At least the last acknowledged version (an append may commit just before its ack is printed).
            let current = try log.streamVersion(stream) ?? 0
            #expect(current >= version, "\(stream) after \(crash)")
            let versions: [UInt64] = try log.readStream(stream, from: 1, limit: .max).map(\.streamVersion)
            #expect(versions == Array(stride(from: 1, through: current, by: 1)), "\(stream) after \(crash)")
            stored[stream] = current
        }
        let report = try await log.verify()
        #expect(report.isIntact, "after \(crash): \(report.problem?.description ?? "")")
        return stored
    }
}

extension CrashTests {
    @Test("a process killed inside a read transaction leaves a reader slot; the stale-reader check frees it")
    func staleReader() async throws {
        let directory = TemporaryDirectory("reader")
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path)
        defer { log.close() }
        _ = try await log.append(event(), to: "s")
        let process = ChildProcess()
        process.executableURL = builtExecutable("log-crash-child")
        process.arguments = [path, "hold-reader"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // Wait until it is inside its read transaction, then kill it there.
        let line = pipe.fileHandleForReading.availableData
        #expect(String(decoding: line, as: UTF8.self).hasPrefix("reading"))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try log.clearStaleReaders() == 1)
        #expect(try log.clearStaleReaders() == 0)
        _ = try await log.append(event(), to: "s")
        await #expect(try log.verify().isIntact)
        #expect(try log.lastPosition() == 2)
    }
}

extension CrashTests {
    @Test(
        "SIGKILL during bulk imports, 8 to 12 times: the unindexed tail grows past the index tail limit, and every acknowledged event survives"
    )
    func killedBulkImporter() async throws {
        let directory = TemporaryDirectory("bulk-crash")
        defer { directory.cleanup() }
        let path = directory.path("log")
        // Commits of 300 events may leave 32 × 64 = 2,048 records unindexed (128 × 64 in the
        // even runs, which never flush when idle).
        let tailLimit = 64
        var generator = SplitMix64(seed: 0xB01C)
        var tailsPastLimit = 0
        var longestTail: UInt64 = 0
        var acknowledged = 0
        var kills = 0
        // Eight kills, and up to four more while fewer than four landed on a long tail (a kill
        // right after a flush, or in an odd run after an idle flush, finds a short one).
        for run in 0..<12 where run < 8 || tailsPastLimit < 4 {
            kills += 1
            let milliseconds = 150 + Int(generator.next() % 250)
            let child = try await ChildRun.run(
                path: path, run: run, writers: 2, mode: "bulk", indexTailLimit: tailLimit, environment: ProcessInfo.processInfo.environment,
                milliseconds: milliseconds, from: .firstAcknowledgement)
            #expect(child.failures.isEmpty, "\(child.failures.prefix(3))")
            acknowledged += child.acknowledged.count

            // What the crash left, before anything reopened the log for writing: the tail's length.
            let log = try EventLog(path: path)
            let unindexed = try log.lastPosition() - log.indexedThrough()
            if unindexed > UInt64(tailLimit) { tailsPastLimit += 1 }
            longestTail = max(longestTail, unindexed)
            let stored = try await Self.expectSurvived(child.acknowledged, in: log, after: "bulk run \(run)")
            // Whole batches of three only.
            for (stream, version) in stored { #expect(version % 3 == 0, "\(stream): \(version)") }
            await log.close()
        }
        print(
            "bulk import crashes: \(kills) kills, \(acknowledged) events acknowledged, \(tailsPastLimit) tails past \(tailLimit), longest \(longestTail)"
        )
        #expect(acknowledged > 3_000, "the importers acknowledged only \(acknowledged) events")
        // The point of the test: kills landed while the tail was longer than a plain commit allows.
        #expect(tailsPastLimit >= 4, "only \(tailsPastLimit) of \(kills) crashes left more than \(tailLimit) records unindexed")
    }
}
