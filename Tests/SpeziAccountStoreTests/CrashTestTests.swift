//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// Runs a built executable of this package (they sit next to the test bundle), its standard
/// error merged into its output. A run still going after `timeLimit` is killed (status 9), so
/// that a hang fails the test with what the tool printed; the tool's own progress deadline
/// (`--progress-limit`, 60 s) should end it long before.
func runTool(_ name: String, _ arguments: [String], timeLimit: Duration = .seconds(240)) async throws -> (status: Int32, output: String) {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
    let run = try await runProgram(executable, arguments, errorsToOutput: true, timeLimit: timeLimit)
    return (run.status, run.output)
}

func count(_ label: String, in output: String) -> Int? {
    output.split(separator: "\n").first { $0.hasPrefix(label + ": ") }.flatMap { Int($0.dropFirst(label.count + 2)) }
}

/// The number that follows `label: ` anywhere in the output (a line may report several).
func number(_ label: String, in output: String) -> Int? {
    guard let range = output.range(of: label + ": ") else { return nil }
    return Int(output[range.upperBound...].prefix { $0.isNumber })
}

/// What every crash-test run must show besides its totals: the kills landed in the middle of the
/// work (at least the rounds that wait for a first acknowledgement, every third, and none of those
/// waits ran out), so that a run that never killed a working process cannot pass.
func expectKillsMidWork(_ output: String, crashes: Int) {
    #expect((number("kills after an acknowledgement", in: output) ?? 0) >= crashes / 3, "\(output)")
    #expect(number("waits for one in vain", in: output) == 0, "\(output)")
}

@Suite("crash-test, the store's kill-and-check tool (a short run; the README runs hundreds)", .timeLimit(.minutes(5)), .integration)
struct CrashTestTests {
    @Test("15 SIGKILLs of a signup/modify/delete workload: nothing acknowledged lost, no mismatch")
    func shortRun() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runTool("crash-test", ["--crashes", "15", "--store", directory.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(count("crashes", in: result.output) == 15)
        expectKillsMidWork(result.output, crashes: 15)
        // Crypto-shredding after real kills: the deletions in the log (15 % of the operations)
        // were each checked to have their key destroyed.
        #expect((number("deletions checked shredded", in: result.output) ?? 0) > 0, "\(result.output)")
        #expect((count("operations acknowledged", in: result.output) ?? 0) > 0)
        #expect(count("lost", in: result.output) == 0)
        #expect(count("mismatches", in: result.output) == 0)
    }

    @Test(
        "12 power cuts (SIGKILL, then every unflushed write to the log, the projections and the key vault undone): nothing acknowledged lost, no mismatch"
    )
    func powerLoss() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runTool("crash-test", ["--crashes", "12", "--power-loss", "--store", directory.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(count("crashes", in: result.output) == 12)
        #expect((count("operations acknowledged", in: result.output) ?? 0) > 0)
        #expect(count("lost", in: result.output) == 0)
        #expect(count("mismatches", in: result.output) == 0)
        // The cuts changed the files' bytes (measured, not taken from the shim's journals): if the
        // shim had not loaded (ld.so only warns) or the undo wrote nothing back, this would be a
        // plain SIGKILL test, and the tool fails such a run by itself.
        #expect((number("bytes rolled back (power loss)", in: result.output) ?? 0) > 0, "\(result.output)")
        expectKillsMidWork(result.output, crashes: 12)
    }

    @Test(
        "the control: 3 power cuts under a store that does not flush lose acknowledged operations, and the check reports them (exit status 0 only then)"
    )
    func controlNoFlush() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runTool("crash-test", ["--crashes", "3", "--control-no-flush", "--store", directory.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(count("crashes", in: result.output) == 3)
        // Every round waits for an acknowledgement before its kill clock starts, and the log was
        // never flushed: each cut takes acknowledged operations with it.
        #expect(number("kills after an acknowledgement", in: result.output) == 3, "\(result.output)")
        #expect((count("operations acknowledged", in: result.output) ?? 0) > 0, "\(result.output)")
        #expect((count("lost", in: result.output) ?? 0) > 0, "\(result.output)")
        #expect(result.output.contains("is not in the log"), "\(result.output)")
        #expect((number("control run (the store did not flush)", in: result.output) ?? 0) > 0, "\(result.output)")
        #expect(result.output.contains("acknowledged operations not in the log, as expected"), "\(result.output)")
        #expect((number("bytes rolled back (power loss)", in: result.output) ?? 0) > 0, "\(result.output)")
    }

    @Test("a child that acknowledges nothing stops the run within the progress limit, with an error naming it (exit status 2)")
    func stalledChild() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let started = ContinuousClock.now
        // The children stop before they open the store; the third round waits for an acknowledgement.
        let result = try await runTool(
            "crash-test", ["--crashes", "3", "--stalling-children", "--progress-limit", "10", "--store", directory.path], timeLimit: .seconds(120))
        #expect(result.status == 2, "\(result.output)")
        #expect(
            result.output.contains("no progress for 10 s: round 3: writer process 0 (pid ") && result.output.contains("acknowledged nothing"),
            "\(result.output)")
        #expect(ContinuousClock.now - started < .seconds(90))
    }

    @Test("the check can fail: an acknowledgement with no event behind it counts as lost, exit status 1")
    func detectsLoss() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("c-never-written signup 00000000-0000-0000-0000-000000000000\n".utf8).write(to: directory.appendingPathComponent("acks.txt"))
        let result = try await runTool("crash-test", ["--crashes", "1", "--store", directory.path])
        #expect(result.status == 1)
        #expect((count("lost", in: result.output) ?? 0) >= 1)
        #expect(result.output.contains("c-never-written"))
    }
}

@Suite("crash-test with several processes on one store", .timeLimit(.minutes(10)), .integration)
struct MultiProcessCrashTests {
    @Test("3 writer processes and a rebuilding process, each killed at random, 8 rounds: nothing acknowledged lost, no mismatch")
    func severalProcesses() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runTool("crash-test", ["--crashes", "8", "--processes", "3", "--rebuilder", "--store", directory.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(count("crashes", in: result.output) == 8)
        // Work was done and checked: at least one acknowledged operation per process and round on
        // average. (How many depends on the machine: CI's slower disk once gave 97 in the 8 rounds.)
        #expect((count("operations acknowledged", in: result.output) ?? 0) >= 24, "\(result.output)")
        #expect(count("lost", in: result.output) == 0)
        #expect(count("mismatches", in: result.output) == 0)
        expectKillsMidWork(result.output, crashes: 8)
    }

    @Test(
        "2 writer processes and a rebuilder reading chunks of 8,192 records in two parts at once, on a log of 20,000 records, killed at random, 6 rounds: nothing acknowledged lost, no mismatch"
    )
    func twoPartRebuilds() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runTool(
            "crash-test",
            ["--crashes", "6", "--processes", "2", "--rebuilder", "--rebuild-chunk", "8192", "--preload", "20000", "--store", directory.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(count("crashes", in: result.output) == 6)
        #expect((count("log records", in: result.output.replacingOccurrences(of: ",", with: "\n")) ?? 0) >= 20_000, "\(result.output)")
        // The rebuilder was killed after reading chunks in two parts (every other round waits for one).
        #expect((count("rebuild chunks read in two parts", in: result.output) ?? 0) >= 3, "\(result.output)")
        #expect(number("rounds killed after a two-part chunk", in: result.output) == 3, "\(result.output)")
        #expect(number("waited in vain", in: result.output) == 0, "\(result.output)")
        #expect((count("operations acknowledged", in: result.output) ?? 0) >= 12, "\(result.output)")
        #expect(count("lost", in: result.output) == 0)
        #expect(count("mismatches", in: result.output) == 0)
    }
}
