//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import MetricsTestKit
import Synchronization
import TestSupport
import Testing

/// A lone appender on a relaxed log commits on its own thread instead of handing the append to the
/// writer thread and waiting for it (issue 62): only when nothing else is queued or committing,
/// never for a durable log, and never while another process has the log open (its write
/// transaction could hold a thread of the cooperative pool).
@Suite("Inline commits of a lone relaxed writer")
struct InlineCommitTests {
    /// How many of the log's appends committed inline so far.
    static func inlineCommits(_ log: EventLog) throws -> Int64 {
        try TestMetricsBackend.shared.expectCounter("eventlog_inline_commits", [("log", log.path)]).totalValue
    }

    @Test("a lone appender's relaxed appends commit inline; a durable log's never do")
    func loneAppender() async throws {
        _ = TestMetricsBackend.shared  // before the logs make their metrics
        try await withTemporaryLog(options: relaxed) { log, _ in
            for index in 0..<50 { _ = try await log.append(event("t", "\(index)"), to: "s\(index % 3)") }
            // A commit slowed by a loaded machine sends the next second's appends to the thread,
            // so not all fifty need to be inline; none would be without the path.
            #expect(try Self.inlineCommits(log) > 0)
            #expect(try await log.read(from: 1, limit: 100).map(\.text) == (0..<50).map { "\($0)" })
        }
        try await withTemporaryLog { log, _ in
            for index in 0..<20 { _ = try await log.append(event("t", "\(index)"), to: "s") }
            #expect(try Self.inlineCommits(log) == 0)
        }
    }

    @Test("inline and queued appends released together keep positions gap-free and each stream's versions in order")
    func concurrentAppenders() async throws {
        _ = TestMetricsBackend.shared
        try await withTemporaryLog(options: relaxed) { log, _ in
            let writers = 8
            let perWriter = 150
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in 0..<perWriter {
                            // Its own stream with a version check, and a shared one without.
                            let own = try await log.append(
                                event("own", "\(writer)/\(index)"), to: "w\(writer)", expectedVersion: index == 0 ? .noStream : .exact(UInt64(index)))
                            #expect(own.streamVersion == UInt64(index + 1))
                            _ = try await log.append(event("shared", "\(writer)/\(index)"), to: "shared")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let all = try await log.read(from: 1, limit: 10_000)
            #expect(all.map(\.position) == Array(1...UInt64(writers * perWriter * 2)))
            for writer in 0..<writers {
                let own = try await log.readStream("w\(writer)")
                #expect(own.map(\.text) == (0..<perWriter).map { "\(writer)/\($0)" })
            }
            let shared = try log.readStream("shared", limit: 10_000)
            #expect(shared.map(\.streamVersion) == Array(1...UInt64(writers * perWriter)))
            // Each writer's own shared events keep its order.
            for writer in 0..<writers {
                let mine = shared.map(\.text).filter { $0.hasPrefix("\(writer)/") }
                #expect(mine == (0..<perWriter).map { "\(writer)/\($0)" })
            }
            await #expect(try log.verify().isIntact)
        }
    }

    @Test(
        "while another process has the log open, appends go to the writer thread, even when it holds the write lock",
        .timeLimit(.minutes(1)))
    func anotherProcess() async throws {
        _ = TestMetricsBackend.shared
        try await withTemporaryLog(options: relaxed) { log, directory in
            _ = try await log.append(event("t", "before"), to: "s")
            let alone = try Self.inlineCommits(log)
            #expect(alone == 1)

            // Another process opens the log and takes its write lock until it reads a line; it
            // keeps the log open until its input closes.
            let holder = ChildProcess()
            holder.executableURL = builtExecutable("log-crash-child")
            holder.arguments = [directory.path("log"), "hold-writer"]
            let input = Pipe()
            let output = Pipe()
            holder.standardInput = input
            holder.standardOutput = output
            try holder.run()
            let line = try await offThePool { String(decoding: output.fileHandleForReading.availableData, as: UTF8.self) }
            try #require(line.contains("writing"), "the lock holder said \(line)")

            // The appends wait for the lock on the writer thread; the test's own task stays free.
            let appends = Task {
                for index in 0..<5 { _ = try await log.append(event("t", "held \(index)"), to: "s") }
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await log.read(from: 1, limit: 10).count == 1)
            try input.fileHandleForWriting.write(contentsOf: Data("release\n".utf8))
            try await appends.value
            #expect(try Self.inlineCommits(log) == alone, "an append went inline while another process had the log open")
            try input.fileHandleForWriting.close()
            try await offThePool { holder.waitUntilExit() }
            #expect(holder.terminationStatus == 0)

            // Alone again: inline again (after at most the second for which a slow commit on a
            // loaded machine sends appends to the thread).
            var after = 0
            while try Self.inlineCommits(log) == alone && after < 40 {
                _ = try await log.append(event("t", "after"), to: "s")
                after += 1
                if try Self.inlineCommits(log) == alone { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(try Self.inlineCommits(log) == alone + 1)
            #expect(try await log.readStream("s").map(\.text) == ["before"] + (0..<5).map { "held \($0)" } + Array(repeating: "after", count: after))
        }
    }
}
