//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// A process that started children (and a PostgreSQL cluster) is killed with SIGKILL: nothing it
/// started may outlive it by more than a few seconds.
@Suite("children die with the process that started them", .timeLimit(.minutes(4)))
struct ChildGuardianTests {
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("child-guardian-check")

    /// Whether `pid` names a live process (a zombie is dead: it only waits to be reaped).
    static func alive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// Starts the subject, waits for its "ready", kills it; returns what it had printed.
    static func killSubject(postgres: Bool) async throws -> (lines: [String], marker: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("guardian-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let marker = folder.appendingPathComponent("cleaned")
        let outputPath = folder.appendingPathComponent("out")
        _ = FileManager.default.createFile(atPath: outputPath.path, contents: nil)
        let subject = ChildProcess()
        subject.executableURL = binary
        subject.arguments = [marker.path] + (postgres ? ["--postgres"] : [])
        subject.standardOutput = try FileHandle(forWritingTo: outputPath)
        try subject.run()
        var lines: [String] = []
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            lines = ((try? String(contentsOf: outputPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            if lines.contains("ready") { break }
            try #require(subject.isRunning, "the subject ended early: \(lines)")
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(lines.contains("ready"), "the subject did not get ready: \(lines)")
        subject.signal(SIGKILL)
        try await offThePool { subject.waitUntilExit() }
        return (lines, marker)
    }

    static func pids(_ lines: [String]) -> [Int32] {
        lines.compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, ["child", "grandchild"].contains(parts[0]) else { return nil }
            return Int32(parts[1])
        }
    }

    @Test("SIGKILL: its children, their own children and its clean-ups are gone within 5 s")
    func childrenDie() async throws {
        let (lines, marker) = try await Self.killSubject(postgres: false)
        let pids = Self.pids(lines)
        #expect(pids.count == 5, "\(lines)")
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, pids.contains(where: Self.alive) || !FileManager.default.fileExists(atPath: marker.path) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(pids.filter(Self.alive).isEmpty, "still running: \(pids.filter(Self.alive))")
        #expect(FileManager.default.fileExists(atPath: marker.path), "the clean-up did not run")
    }

    @Test("SIGKILL: its PostgreSQL cluster is stopped and deleted within 10 s", .integration)
    func clusterStops() async throws {
        let (lines, _) = try await Self.killSubject(postgres: true)
        let directory = try #require(lines.first { $0.hasPrefix("postgres ") }.map { String($0.dropFirst("postgres ".count)) })
        // The subject read the postmaster's pid before it was killed (the guardian may already
        // have deleted the folder).
        let postmaster = try #require(
            lines.first { $0.hasPrefix("postmaster ") }.flatMap { Int32($0.dropFirst("postmaster ".count)) },
            "the subject printed no postmaster pid: \(lines)")
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, Self.alive(postmaster) || FileManager.default.fileExists(atPath: directory) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!Self.alive(postmaster), "the cluster's postmaster \(postmaster) still runs")
        #expect(!FileManager.default.fileExists(atPath: directory), "the cluster's folder is still there")
    }
}
