//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Dispatch
import EventLog
import Foundation
import LMDB
import Projections
import Synchronization
import Testing

/// An LMDB environment holds a fixed number of tables, and each rebuild makes a new generation of
/// them. The generations a rebuild replaces are deleted once no read of the process is inside them.
@Suite("Rebuilds, again and again, in one process; cancelled waits")
struct RepeatedRebuildTests {
    @Test("40 rebuilds in one process all finish (the environment has room for 10 tables), and the counts are right", .timeLimit(.minutes(5)))
    func manyRebuilds() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let (log, store) = try await Self.countedStore(fixture)
        defer { log.close() }
        for _ in 0..<40 {
            try await store.rebuild("stream-counts")
        }
        let status = try #require(try await store.status().first)
        #expect(status.generation == 41 && status.checkpoint == 200 && status.failure == nil && status.storageError == nil)
        for stream in 0..<4 {
            #expect(try StreamCounts.count("s\(stream)", in: store) == 50)
        }
        await store.close()
        // The file keeps the meta table, the serving generation's table and at most the one it
        // replaced last (deleted at the runner's next round, which a close may come before).
        let environment = try Environment(path: fixture.projectionsPath)
        let names = try environment.databaseNames()
        environment.close()
        #expect(names.count <= 3 && names.contains("stream-counts#41/counts"), "\(names)")
    }

    @Test("a read inside a generation while rebuilds replace it reads it whole; its tables go once the read ends", .timeLimit(.minutes(5)))
    func readAcrossReplacements() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let (log, store) = try await Self.countedStore(fixture)
        defer { log.close() }

        // A reader on a thread of its own stops inside its read of generation 1 until released.
        let release = DispatchSemaphore(value: 0)
        let inside = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<[UInt64], any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let read = Result {
                try store.read("stream-counts") { state -> [UInt64] in
                    func count(_ stream: Int) throws -> UInt64 {
                        try state.get("counts", key: Array("s\(stream)".utf8)).map { $0.withUnsafeBytes { BigEndian.uint64($0) } } ?? 0
                    }
                    // Its tables are first touched after the rebuilds below: a deleted table
                    // (a closed handle, its slot given to a newer generation) would show here.
                    inside.signal()
                    release.wait()
                    // Generation 1 has been replaced (and emptied in later snapshots) meanwhile.
                    return try (0..<4).map(count)
                }
            }
            outcome.withLock { $0 = read }
            finished.signal()
        }
        await waitOffThePool(inside)
        // Each rebuild replaces the serving generation; the runner deletes the unread ones first.
        for _ in 0..<12 {
            try await store.rebuild("stream-counts")
        }
        release.signal()
        await waitOffThePool(finished)
        let counts = try #require(outcome.withLock { $0 }).get()
        #expect(counts == Array(repeating: 50, count: 4), "the read saw its generation whole after the rebuilds")
        // With the read over, its generation's tables are deleted too: 30 more rebuilds fit.
        for _ in 0..<30 {
            try await store.rebuild("stream-counts")
        }
        let status = try #require(try await store.status().first)
        #expect(status.generation == 43 && status.failure == nil && status.storageError == nil)
        #expect(try StreamCounts.count("s3", in: store) == 50)
        await store.close()
    }

    @Test("cancelling a rebuild's wait ends the wait; the rebuild goes on and takes over", .timeLimit(.minutes(5)))
    func cancelledWait() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let (gate, store) = try await gatedCounts(fixture, log: log, catchUpBatchSize: 100_000)
        // The rebuild stops at record 100, in its apply, on the projections' own thread.
        gate.arm(at: 100)
        let waiting = Task { try await store.rebuild("stream-counts") }
        await gate.waitUntilReached()
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        let held = try #require(try await store.status().first)
        #expect(held.generation == 1 && held.rebuilding != nil, "the rebuild had not taken over when its wait ended")
        gate.open()
        // The rebuild goes on by itself and takes over.
        try await waitForGeneration(2, of: store, limit: .seconds(60))
        let status = try #require(try await store.status().first)
        #expect(status.generation == 2 && status.checkpoint == 5_000 && status.failure == nil)
        #expect(try StreamCounts.count("s1", in: store) == 1_000)
        // A wait cancelled before it starts requests nothing.
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await store.rebuild("stream-counts")
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        try await store.rebuild("stream-counts")
        #expect(try await store.status().first?.generation == 3)
        await store.close()
    }

    @Test("cancelling a read-your-writes wait ends it with CancellationError, not at its timeout", .timeLimit(.minutes(5)))
    func cancelledAppliedWait() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let (log, store) = try await Self.countedStore(fixture)
        defer { log.close() }
        // Position 1,000 is never written: the wait would end at the 30 s timeout, as timedOut.
        let waiting = Task { try await store.waitUntilApplied("stream-counts", position: 1_000) }
        while store.waitingCommands == 0 { try await Task.sleep(for: .milliseconds(1)) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(store.waitingCommands == 0)
        // A wait whose task was cancelled before it began does not wait either.
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await store.waitUntilApplied("stream-counts", position: 1_000)
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        await store.close()
    }

    /// A log of 200 records over 4 streams and a store whose counts have applied them all.
    private static func countedStore(_ fixture: Fixture) async throws -> (EventLog, ProjectionStore) {
        let log = try fixture.openLog()
        try await append(log, 200, stream: { "s\($0 % 4)" })
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        try await store.waitUntilApplied("stream-counts", position: 200)
        return (log, store)
    }

    /// Waits for `semaphore` on a thread of its own, not on Swift's cooperative pool.
    private func waitOffThePool(_ semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                semaphore.wait()
                continuation.resume()
            }
        }
    }
}
