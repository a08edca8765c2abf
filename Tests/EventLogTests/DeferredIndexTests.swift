//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LMDB
import TestSupport
import TestTiers
import Testing

@testable import EventLog

@Suite("Deferred indexing: the unindexed tail")
struct DeferredIndexTests {
    private let readOnlyOptions: EventLogOptions = {
        var options = EventLogOptions()
        options.readOnly = true
        return options
    }()
    private let readOnlyEnvironment: EnvironmentOptions = {
        var options = EnvironmentOptions()
        options.readOnly = true
        return options
    }()

    @Test("lookups see the tail; the indexes are written every N records and when the log closes")
    func tailAndFlushes() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path, options: tailOptions(tail: 8))
        var expected: [String: [UUID]] = [:]
        var indexedAfter: [UInt64] = []
        for index in 0..<21 {
            let stream = "s\(index % 3)"
            let proposed = event()
            let result = try await log.append(proposed, to: stream, expectedVersion: .exact(UInt64(expected[stream, default: []].count)))
            expected[stream, default: []].append(proposed.eventID)
            #expect(result.positions == UInt64(index + 1)...UInt64(index + 1))
            indexedAfter.append(try log.indexedThrough())
            try expectLookups(log, expected, "after append \(index + 1)")
        }
        // The 8th, 16th appends wrote the indexes; the others left their records in the tail.
        #expect(indexedAfter == [0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16])

        // A stale expected version is still refused when the stream's last event is in the tail.
        await #expect(throws: EventLogError.wrongExpectedVersion(stream: "s2", expected: .exact(6), actual: 7)) {
            try await log.append(event(), to: "s2", expectedVersion: .exact(6))
        }
        // A retry of an event in the tail writes nothing and answers with its first position.
        let tailID = try #require(expected["s1"]?.last)
        let original = try #require(try log.position(ofEvent: tailID))
        #expect(original > 16)
        let retry = try await log.append(
            ProposedEvent(eventID: tailID, type: "test.event", payload: Data("payload".utf8)), to: "s1")
        #expect(retry.wasDuplicate && retry.positions == original...original)
        #expect(try log.lastPosition() == 21)
        #expect(try await log.verify().isIntact)
        await log.close()

        let reopened = try EventLog(path: path, options: tailOptions(tail: 8))
        defer { reopened.close() }
        #expect(try reopened.indexedThrough() == 21)
        try expectLookups(reopened, expected, "after a clean close")
        let statistics = try reopened.statistics()
        #expect(statistics.records == 21)
    }

    @Test("commits of 256 events or more let the tail grow to 32 times the limit; the next small commit writes it all")
    func bulkCommits() async throws {
        // A batch is queued in parts of 64 appends, and the writer commits what it has when the
        // next part is 20 ms late: on a starved machine a batch can become several small commits,
        // which write the indexes at once. Such a run still has to be correct, but says nothing
        // about bulk commits; the scenario is tried again on a new log (at most five times).
        var unsplit = 0
        for attempt in 1...5 where unsplit == 0 {
            if try await bulkScenario(attempt: attempt) { unsplit += 1 }
        }
        #expect(unsplit == 1, "every one of five runs had a batch split into several commits")
    }

    /// The id of the log's last committed transaction (LMDB numbers them one by one).
    private func lastTransaction(_ log: EventLog) throws -> Int {
        try log.environment.read { $0.id }
    }

    /// Three bulk commits and a small one on a new log; false when a batch was committed in pieces
    /// (then only the lookups are checked).
    private func bulkScenario(attempt: Int) async throws -> Bool {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let log = try EventLog(path: directory.path("log"), options: tailOptions(tail: 16))
        defer { log.close() }
        var expected: [String: [UUID]] = [:]
        var indexedAfter: [UInt64] = []
        // Three bulk commits of 128 streams × 2 events (256 records each; the tail may reach
        // 32 × 16 = 512 records after one), then a single append.
        for round in 0..<3 {
            let appends = (0..<128).map { index in
                let events = [event(), event()]
                expected["b\(index)", default: []] += events.map(\.eventID)
                return StreamAppend(streamID: "b\(index)", events: events, expectedVersion: round == 0 ? .noStream : .exact(UInt64(round * 2)))
            }
            let before = try lastTransaction(log)
            for outcome in await log.appendBatch(appends) { _ = try outcome.get() }
            let commits = try lastTransaction(log) - before
            if commits != 1 {
                try expectLookups(log, expected, "after a batch split into \(commits) commits")
                print("bulk commits, run \(attempt): a batch of 256 events became \(commits) commits; trying again")
                return false
            }
            indexedAfter.append(try log.indexedThrough())
        }
        try expectLookups(log, expected, "after the bulk commits")
        let single = event()
        expected["b0", default: []].append(single.eventID)
        _ = try await log.append(single, to: "b0", expectedVersion: .exact(6))
        indexedAfter.append(try log.indexedThrough())
        // 256 records stay in the tail after the first bulk commit; the second brings it to 512
        // and writes the indexes; the third leaves 256 again; the single append, a small commit,
        // finds 257 over its limit of 16 and writes them all.
        #expect(indexedAfter == [0, 512, 512, 769])
        try expectLookups(log, expected, "after the small commit")
        #expect(try await log.verify().isIntact)
        return true
    }

    @Test("a transaction that does not commit leaves no entries in the tail: batches that fill the map are retried in a larger one")
    func uncommittedEntriesDropped() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        var options = tailOptions(tail: 4_096)
        options.initialMapSize = 128 << 10
        let log = try EventLog(path: directory.path("log"), options: options)
        let mapBefore = try log.statistics().mapBytes
        var expected: [String: [UUID]] = [:]
        let payload = String(repeating: "x", count: 1_000)
        // Each batch is 8 appends of 10 events of 1 kB: the map fills in the middle of a batch,
        // after the first appends' entries went into the tail, and the whole batch runs again.
        for round in 0..<6 {
            let appends = (0..<8).map { index in
                let events = (0..<10).map { _ in event("e", payload) }
                expected["m\(index)", default: []] += events.map(\.eventID)
                return StreamAppend(streamID: "m\(index)", events: events, expectedVersion: round == 0 ? .noStream : .exact(UInt64(round * 10)))
            }
            var positions: [ClosedRange<UInt64>] = []
            for outcome in await log.appendBatch(appends) { positions.append(try outcome.get().positions) }
            let first = UInt64(round * 80 + 1)
            let wanted: [ClosedRange<UInt64>] = (0..<8).map { (index: Int) -> ClosedRange<UInt64> in
                let start = first + UInt64(index * 10)
                return start...(start + 9)
            }
            #expect(positions == wanted)
        }
        #expect(try log.statistics().mapBytes > mapBefore, "the map never filled: no transaction was retried")
        // A time-ordered id (after every key of `event-ids`) is found in the tail, and after the
        // close in the index: each retry writes nothing.
        let ordered = event(id: .timeOrdered())
        _ = try await log.append(ordered, to: "m0", expectedVersion: .exact(60))
        expected["m0", default: []].append(ordered.eventID)
        let retried = try await log.append(ordered, to: "m0")
        #expect(retried.wasDuplicate && retried.positions == 481...481)
        #expect(try log.indexedThrough() == 0)
        try expectLookups(log, expected, "with the tail")
        #expect(try await log.verify().isIntact)
        await log.close()
        let reopened = try EventLog(path: directory.path("log"), options: options)
        defer { reopened.close() }
        #expect(try reopened.indexedThrough() == 481)
        try expectLookups(reopened, expected, "after the close wrote the tail")
        let again = try await reopened.append(ordered, to: "m0")
        #expect(again.wasDuplicate && again.positions == 481...481)
        #expect(try reopened.lastPosition() == 481)
        #expect(try await reopened.verify().isIntact)
    }

    @Test("a writer left idle after bulk commits writes their tail into the indexes on its own; one told to wait an hour does not")
    func idleFlushAfterBulkCommits() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        var eager = tailOptions(tail: 16)
        eager.bulkIndexTailLimit = 100_000
        eager.idleIndexFlushDelay = .milliseconds(20)
        var patient = eager
        patient.idleIndexFlushDelay = .seconds(3_600)
        let logs = try [EventLog(path: directory.path("eager"), options: eager), EventLog(path: directory.path("patient"), options: patient)]
        var expected: [String: [UUID]] = [:]
        let appends = (0..<150).map { index in
            let events = [event(), event()]
            expected["s\(index)", default: []] += events.map(\.eventID)
            return StreamAppend(streamID: "s\(index)", events: events, expectedVersion: .noStream)
        }
        for log in logs {
            for outcome in await log.appendBatch(appends) { _ = try outcome.get() }
        }
        // One bulk commit of 300 events each, under the bulk limit: nothing flushed it. The eager
        // writer does once it has been idle for 20 ms, without another commit.
        #expect(try await indexedThrough(logs[0], reaching: 300, within: .seconds(10)) == 300)
        #expect(try logs[1].indexedThrough() == 0)
        for log in logs {
            try expectLookups(log, expected, "after the bulk commit")
            #expect(try await log.verify().isIntact)
            await log.close()
        }
    }

    @Test("a copy taken while the log is open (a crash image) has an unindexed tail that every reader rebuilds", .integration)
    func crashImage() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path, options: tailOptions(tail: 10))
        var expected: [String: [UUID]] = [:]
        for index in 0..<27 {
            let events = (0...(index % 2)).map { _ in event() }
            _ = try await log.append(events, to: "stream-\(index % 4)")
            expected["stream-\(index % 4)", default: []] += events.map(\.eventID)
        }
        let indexed = try log.indexedThrough()
        let last = try log.lastPosition()
        #expect(indexed > 0 && indexed < last, "the image must have both indexed records and a tail")
        // Every commit's pages are in the file once it returns: a copy is what a crash leaves.
        let image = directory.path("image")
        try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: path + "/data.mdb", toPath: image + "/data.mdb")
        await log.close()

        let readOnly = try EventLog(path: image, options: readOnlyOptions)
        #expect(try readOnly.indexedThrough() == indexed)
        try expectLookups(readOnly, expected, "read-only on the crash image")
        #expect(try await readOnly.verify().isIntact)
        await readOnly.close()
        // FORMAT.md's reader must agree (Tools/run.sh installs Python's lmdb; no silent skip).
        try #require(pythonLMDBAvailable, "needs python3 with the lmdb package")
        let check = try await runFormatCheck([image])
        #expect(check.status == 0, "\(check.errors)")
        #expect(check.errors.contains("OK \(last) records"))

        // A writer on the image goes on where the crash left off, then indexes everything.
        let writer = try EventLog(path: image, options: tailOptions(tail: 10))
        try expectLookups(writer, expected, "writable on the crash image")
        let next = event()
        let result = try await writer.append(next, to: "stream-0", expectedVersion: .exact(UInt64(expected["stream-0"]!.count)))
        expected["stream-0"]!.append(next.eventID)
        #expect(result.positions.lowerBound == last + 1)
        await writer.close()
        let reopened = try EventLog(path: image)
        defer { reopened.close() }
        #expect(try reopened.indexedThrough() == last + 1)
        try expectLookups(reopened, expected, "after the writer closed")
        #expect(try await reopened.verify().isIntact)
    }

    @Test(
        "three writer processes on one log with a 7-record tail, killed mid-work: each flushes the others' records too, and every lookup answers",
        .integration)
    func processesShareTheTail() async throws {
        let directory = TemporaryDirectory("tail-processes")
        defer { directory.cleanup() }
        let path = directory.path("log")
        // Create the log first, so that the three children open an existing one. Each works 900 ms
        // from opening it, and longer if it has not appended past several flushes by then.
        try await EventLog(path: path).close()
        let enough: @Sendable (ChildRun) -> Bool = { $0.acknowledged.count > 21 }
        async let first = ChildRun.run(path: path, run: 0, writers: 3, indexTailLimit: 7, environment: [:], milliseconds: 900, until: enough)
        async let second = ChildRun.run(path: path, run: 1, writers: 3, indexTailLimit: 7, environment: [:], milliseconds: 900, until: enough)
        async let third = ChildRun.run(path: path, run: 2, writers: 3, indexTailLimit: 7, environment: [:], milliseconds: 900, until: enough)
        let runs = try await [first, second, third]
        let acknowledged = runs.flatMap(\.acknowledged)
        #expect(runs.allSatisfy { $0.acknowledged.count > 21 }, "every process appended past several flushes")
        // The processes really interleaved: consecutive positions belong to different processes.
        let owner = Dictionary(uniqueKeysWithValues: runs.enumerated().flatMap { run, child in child.acknowledged.map { ($0.position, run) } })
        let positions = owner.keys.sorted()
        let switches = zip(positions, positions.dropFirst()).filter { owner[$0] != owner[$1] }.count
        #expect(switches > 10)

        let log = try EventLog(path: path, options: tailOptions(tail: 7))
        #expect(try await log.verify().isIntact)
        #expect(try log.indexedThrough() > 0)
        var lastVersions: [String: UInt64] = [:]
        for ack in acknowledged {
            #expect(try log.record(at: ack.position)?.eventID == ack.eventID)
            #expect(try log.position(ofEvent: ack.eventID) == ack.position)
            lastVersions[ack.stream] = max(lastVersions[ack.stream] ?? 0, ack.version)
        }
        for (stream, version) in lastVersions {
            let stored = try #require(try log.streamVersion(stream))
            #expect(stored >= version)
            #expect(try log.readStream(stream, from: 1, limit: .max).map(\.streamVersion) == Array(1...stored))
        }
        await log.close()
        // FORMAT.md's reader must agree (Tools/run.sh installs Python's lmdb; no silent skip).
        try #require(pythonLMDBAvailable, "needs python3 with the lmdb package")
        let check = try await runFormatCheck([path])
        #expect(check.status == 0, "\(check.errors)")
    }

    @Test("verify reports an indexed-through that claims more than the indexes hold", .integration)
    func tamperedIndexedThrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path, options: tailOptions(tail: 100))
        for index in 0..<6 { _ = try await log.append(event(), to: "s\(index % 2)") }
        #expect(try log.indexedThrough() == 0)
        let image = directory.path("image")
        try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: path + "/data.mdb", toPath: image + "/data.mdb")
        await log.close()
        do {
            let environment = try Environment(path: image)
            let meta = try environment.openDatabase("meta")
            try environment.write { txn in try txn.put(meta, key: Array("indexed-through".utf8), value: [0, 0, 0, 0, 0, 0, 0, 4]) }
            environment.close()
        }
        let damaged = try EventLog(path: image, options: readOnlyOptions)
        defer { damaged.close() }
        let report = try await damaged.verify()
        #expect(report.problem?.kind == .indexMismatch)
        #expect(report.problem?.position == 1)
        // FORMAT.md's reader must agree (Tools/run.sh installs Python's lmdb; no silent skip).
        try #require(pythonLMDBAvailable, "needs python3 with the lmdb package")
        let check = try await runFormatCheck([image])
        #expect(check.status == 1)
        #expect(check.errors.contains("stream index disagrees"), "\(check.errors)")
    }

    @Test("a format-1 log (indexed every commit) opens and is upgraded in place when opened for writing")
    func upgradesFormatOne() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        var expected: [String: [UUID]] = [:]
        do {
            let log = try EventLog(path: path, options: tailOptions(tail: 0))
            for index in 0..<9 {
                let proposed = event()
                _ = try await log.append(proposed, to: "s\(index % 3)")
                expected["s\(index % 3)", default: []].append(proposed.eventID)
            }
            #expect(try log.indexedThrough() == 9)
            await log.close()
        }
        // What a format-1 log looks like: version 1, no indexed-through.
        do {
            let environment = try Environment(path: path)
            let meta = try environment.openDatabase("meta")
            try environment.write { txn in
                try txn.put(meta, key: Array("format-version".utf8), value: [0, 0, 0, 1])
                _ = try txn.delete(meta, key: Array("indexed-through".utf8))
            }
            environment.close()
        }
        let readOnly = try EventLog(path: path, options: readOnlyOptions)
        #expect(try readOnly.indexedThrough() == 9)
        try expectLookups(readOnly, expected, "format 1, read-only")
        await readOnly.close()

        let log = try EventLog(path: path, options: tailOptions(tail: 4))
        let proposed = event()
        _ = try await log.append(proposed, to: "s0", expectedVersion: .exact(3))
        expected["s0"]!.append(proposed.eventID)
        try expectLookups(log, expected, "upgraded")
        #expect(try log.indexedThrough() == 9)
        await log.close()
        let environment = try Environment(path: path, options: readOnlyEnvironment)
        defer { environment.close() }
        let meta = try environment.openDatabase("meta")
        #expect(try environment.read { txn in try txn.get(meta, key: Array("format-version".utf8)) } == [0, 0, 0, 2])
    }
}
