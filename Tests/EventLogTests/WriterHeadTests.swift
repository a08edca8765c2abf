//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import TestSupport
import Testing

// Shared by the deferred-indexing suites (DeferredIndexTests, WriterHeadTests).

/// A tail limit of `tail`, 32 times that after bulk commits, and no flush when idle.
func tailOptions(tail: Int) -> EventLogOptions {
    var options = relaxed
    options.indexTailLimit = tail
    options.bulkIndexTailLimit = tail * 32
    options.idleIndexFlushDelay = .seconds(3_600)
    return options
}

/// The log's `indexedThrough()` once it reaches `position` (an idle flush writing the tail), or
/// its last value when `limit` passes first.
func indexedThrough(_ log: EventLog, reaching position: UInt64, within limit: Duration) async throws -> UInt64 {
    let deadline = ContinuousClock.now + limit
    var indexed = try log.indexedThrough()
    while indexed < position, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
        indexed = try log.indexedThrough()
    }
    return indexed
}

/// Every lookup of `log` agrees with `expected` (stream → event ids in version order).
func expectLookups(_ log: EventLog, _ expected: [String: [UUID]], _ context: String) throws {
    for (stream, ids) in expected {
        #expect(try log.streamVersion(stream) == UInt64(ids.count), "\(stream) \(context)")
        let events = try log.readStream(stream)
        #expect(events.map(\.eventID) == ids, "\(stream) \(context)")
        #expect(events.map(\.streamVersion) == Array(1...UInt64(ids.count)))
        // From a middle version, with a limit that ends inside the tail and one past the end.
        let middle = UInt64(ids.count / 2 + 1)
        #expect(
            try log.readStream(stream, from: middle, limit: 2).map(\.eventID) == Array(ids[Int(middle - 1)..<min(Int(middle + 1), ids.count)]))
        #expect(try log.readStream(stream, from: UInt64(ids.count) + 1).isEmpty)
        for (index, id) in ids.enumerated() {
            let position = try #require(try log.position(ofEvent: id), "\(id) \(context)")
            #expect(try log.record(at: position)?.streamVersion == UInt64(index + 1))
        }
    }
}

@Suite("The writer's head across commits")
struct WriterHeadTests {
    @Test("the writer reuses the head its last commit left only while nothing else committed: metadata writes, flushes and retries in between")
    func headAcrossOtherCommits() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path, options: tailOptions(tail: 3))
        var expected: [String: [UUID]] = [:]
        var appended: [(position: UInt64, id: UUID, event: ProposedEvent, stream: String)] = []
        for index in 0..<40 {
            let stream = "s\(index % 3)"
            let proposed = event("test.event", "event \(index)")
            let result = try await log.append(proposed, to: stream, expectedVersion: .exact(UInt64(expected[stream, default: []].count)))
            #expect(!result.wasDuplicate)
            // Positions follow each other whatever committed in between.
            #expect(result.positions == UInt64(index + 1)...UInt64(index + 1))
            expected[stream, default: []].append(proposed.eventID)
            appended.append((result.positions.lowerBound, proposed.eventID, proposed, stream))
            switch index % 4 {
            case 0:
                // A commit of the log's own that is not an append: the next append reads the head again.
                _ = try log.setMetadataIfAbsent("note-\(index)", Array("\(index)".utf8))
            case 1:
                // A retry of an append already in the log (found in the tail or the index): nothing is written.
                let (position, id, earlier, stream) = appended[index / 2]
                let retry = try await log.append(earlier, to: stream)
                #expect(retry.wasDuplicate && retry.positions.lowerBound == position, "\(id)")
            case 2:
                // An append refused by its expected version commits nothing of its own.
                await #expect(throws: EventLogError.self) { try await log.append(event(), to: stream, expectedVersion: .noStream) }
            default:
                break
            }
        }
        #expect(try log.indexedThrough() > 30, "the 3-record tail was flushed several times")
        try expectLookups(log, expected, "after interleaved commits")
        #expect(try await log.verify().isIntact)
        await log.close()
        let reopened = try EventLog(path: path, options: tailOptions(tail: 3))
        try expectLookups(reopened, expected, "reopened")
        #expect(try reopened.lastPosition() == 40)
        await reopened.close()
    }

    @Test("after an idle flush or another process's appends, the writer reads the head and the indexes again")
    func headAfterCommitsElsewhere() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        var settings = tailOptions(tail: 4)
        settings.idleIndexFlushDelay = .milliseconds(20)
        settings.bulkIndexTailLimit = 10_000
        let log = try EventLog(path: path, options: settings)
        // A bulk batch leaves its 300 records unindexed; the writer writes them into the indexes
        // in a commit of its own once idle.
        let batch = (0..<300).map { event("test.event", "bulk \($0)") }
        let first = await log.appendBatch([StreamAppend(streamID: "bulk", events: batch)])
        #expect(try first[0].get().positions == 1...300)
        #expect(try await indexedThrough(log, reaching: 300, within: .seconds(30)) == 300, "the idle flush ran")
        // A retry of an event that is now only in the index, not in the tail: nothing is written.
        let retry = try await log.append(batch[150], to: "bulk")
        #expect(retry.wasDuplicate && retry.positions == 151...151)
        #expect(try log.lastPosition() == 300)

        // Another process appends between two appends of this one.
        let before = try await log.append(event(), to: "mine")
        #expect(before.positions == 301...301)
        let child = try await ChildRun.run(
            path: path, run: 7, writers: 1, mode: "relaxed", environment: [:], milliseconds: 50, until: { $0.acknowledged.count >= 3 })
        #expect(child.acknowledged.count >= 3 && child.failures.isEmpty, "\(child.failures)")
        let end = try log.lastPosition()
        #expect(end >= 304)
        let after = try await log.append(event(), to: "mine", expectedVersion: .exact(1))
        #expect(after.positions == (end + 1)...(end + 1))
        #expect(after.streamVersion == 2)
        #expect(try await log.verify().isIntact)
        await log.close()
    }
}
