//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import Projections
import Synchronization
import Testing

/// Keeps, per stream, how many records were applied and the last version, and refuses a record
/// whose version does not follow the last one: applying a record twice, skipping one, or mixing up
/// a stream's order stops it. Its streams are independent, so a rebuild may go stream by stream.
/// Every application is also noted in `applied` (stream, version, position), in order.
struct StreamHistory: Projection {
    let gate: Gate
    let applied = Applications()
    var name: String { "stream-history" }
    var fingerprint: String { "stream-history-v1" }
    var databaseNames: [String] { ["history"] }
    var buildsStreamByStream: Bool { true }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        gate.pass(record.position)
        let key = record.withStreamIDBytes { Array($0) }
        let (count, last) = try state.get("history", key: key).map(Self.decode) ?? (0, 0)
        guard record.streamVersion == last + 1 else {
            throw TestFailure(message: "\(record.streamID) version \(record.streamVersion) after \(last)")
        }
        try state.put("history", key: key, value: BigEndian.bytes(count + 1) + BigEndian.bytes(record.streamVersion))
        applied.append((record.streamID, record.streamVersion, record.position))
    }

    /// The applications so far, shared by the copies of the projection.
    final class Applications: Sendable {
        let entries = Mutex<[(stream: String, version: UInt64, position: UInt64)]>([])
        func withLock<T>(_ body: (inout [(stream: String, version: UInt64, position: UInt64)]) -> T) -> T { entries.withLock { body(&$0) } }
        func append(_ entry: (String, UInt64, UInt64)) { entries.withLock { $0.append(entry) } }
    }

    static func decode(_ bytes: [UInt8]) -> (UInt64, UInt64) {
        bytes.withUnsafeBytes { (BigEndian.uint64($0), BigEndian.uint64(UnsafeRawBufferPointer(rebasing: $0[8...]))) }
    }
}

@Suite("Rebuilds stream by stream")
struct StreamBuildTests {
    /// 37 streams, named so that their byte order is plain, of uneven lengths, interleaved.
    static func stream(_ index: Int) -> String { String(format: "s%02d", (index * 7 + index / 37) % 37) }

    /// 3,050 records: the log indexes them in steps of 100, so the last 50 are not in its index.
    static let total: UInt64 = 3_050

    static func openLog(_ fixture: Fixture) throws -> EventLog {
        var options = EventLogOptions()
        options.sync = .relaxed
        // A short unindexed tail: most records are in the streams index, the last ones are not.
        options.indexTailLimit = 100
        return try EventLog(path: fixture.logPath, options: options)
    }

    static func options() -> ProjectionStoreOptions {
        var options = ProjectionStoreOptions()
        options.batchSize = 64
        options.catchUpBatchSize = 256
        return options
    }

    /// The streams' record counts in the log.
    static func expected(_ log: EventLog) throws -> [String: UInt64] {
        var counts: [String: UInt64] = [:]
        try log.scan { record in
            counts[record.streamID, default: 0] += 1
            return true
        }
        return counts
    }

    /// Checks that `applied` holds every record once: those up to `limit` stream by stream (each
    /// stream's records together, in version order, the streams in byte order), then the rest in
    /// log order.
    static func checkStreamOrder(_ applied: [(stream: String, version: UInt64, position: UInt64)], limit: UInt64) {
        #expect(applied.count == Int(total), "every record once")
        #expect(Set(applied.map(\.position)).count == Int(total))
        let byStream = applied.prefix { $0.position <= limit }
        #expect(byStream.count == Int(limit), "the records up to \(limit) come first")
        var runs: [String] = []
        for entry in byStream where runs.last != entry.stream { runs.append(entry.stream) }
        #expect(runs == runs.sorted() && Set(runs).count == runs.count, "one run per stream, in byte order: \(runs)")
        #expect(runs.count == 37)
        #expect(applied.suffix(from: byStream.count).map(\.position) == Array((limit + 1)...total), "then the rest in log order")
    }

    /// Waits until `store`'s projection is held at the gate's record, then closes the store; the
    /// held transaction finishes and commits before the runner stops.
    static func closeWhenHeld(_ store: ProjectionStore, gate: Gate) async {
        await gate.waitUntilReached()
        let closing = Task { await store.close() }
        gate.open()
        await closing.value
    }

    /// Checks every stream's stored count and last version against the log, in `database` of
    /// the projection `name` (a count and a last version per stream, as ``StreamHistory`` keeps them).
    static func checkStates(
        _ store: ProjectionStore, log: EventLog, projection name: String = "stream-history", database: String = "history", _ context: String = ""
    ) throws {
        for (stream, count) in try expected(log) {
            let stored = try #require(try store.read(name) { state in try state.get(database, key: Array(stream.utf8)).map(StreamHistory.decode) })
            #expect(stored.0 == count && stored.1 == count, "\(context)\(stream): \(stored) of \(count)")
        }
    }

    @Test(
        "a first build and a rebuild apply each stream's records together, streams in byte order, then the rest in log order; the states are right"
    )
    func streamOrder() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try Self.openLog(fixture)
        defer { log.close() }
        try await append(log, Int(Self.total), stream: Self.stream)
        let limit = try log.streamOrderLimit()
        #expect(limit > 2_000 && limit < Self.total, "most records are indexed, the last ones are not (\(limit))")

        // A first build: built beside the empty serving generation (which is not advanced), then it serves.
        let history = StreamHistory(gate: Gate())
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [history], options: Self.options())
        try await store.waitUntilApplied("stream-history", position: Self.total)
        Self.checkStreamOrder(history.applied.withLock { $0 }, limit: limit)
        try Self.checkStates(store, log: log)
        var status = try #require(try await store.status().first)
        #expect(status.failure == nil && status.generation == 2 && status.checkpoint == Self.total)
        history.applied.withLock { $0.removeAll() }

        // A rebuild, reporting its progress after each of its transactions.
        let reports = Mutex<[UInt64]>([])
        try await store.rebuild("stream-history") { applied, _ in reports.withLock { $0.append(applied) } }
        Self.checkStreamOrder(history.applied.withLock { $0 }, limit: limit)
        let progress = reports.withLock { $0 }
        #expect(progress.filter { $0 < limit }.count >= 3, "the stream pass commits in several chunks: \(progress)")
        try Self.checkStates(store, log: log)
        status = try #require(try await store.status().first)
        #expect(status.failure == nil && status.generation == 3 && status.checkpoint == Self.total)
        await store.close()
    }

    @Test("a rebuild stopped halfway through its stream pass goes on after reopening: nothing applied twice or skipped")
    func resumesFromMarker() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try Self.openLog(fixture)
        defer { log.close() }
        try await append(log, Int(Self.total), stream: Self.stream)
        let gate = Gate()
        let history = StreamHistory(gate: gate)
        let first = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [history], options: Self.options())
        try await first.waitUntilApplied("stream-history", position: Self.total)

        // The rebuild held at the 3rd record of stream s01 (in the pass's second chunk), then closed.
        let streams = try Self.expected(log).keys.sorted()
        #expect(streams.first == "s00")
        var s01: [UInt64] = []
        try log.scan { record in
            if record.streamID == "s01" { s01.append(record.position) }
            return true
        }
        gate.arm(at: s01[2])
        let rebuild = Task { try await first.rebuild("stream-history") }
        await Self.closeWhenHeld(first, gate: gate)
        await #expect(throws: ProjectionError.closed) { try await rebuild.value }
        let halfway = history.applied.withLock { $0.count }
        #expect(halfway > Int(Self.total) && halfway < Int(Self.total) + 2_000, "the pass stopped early (\(halfway - Int(Self.total)) records)")

        // Held at the log's last record (applied in log order, after the stream pass) while the
        // status is read: unheld, the rest of the rebuild could be done first.
        gate.arm(at: Self.total)
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [history], options: Self.options())
        await gate.waitUntilReached()
        let reopened = try await store.status().first
        gate.open()
        #expect(reopened?.rebuilding?.generation == 3, "the rebuild goes on in the same generation")
        while try await store.status().first?.generation != 3 { try await Task.sleep(for: .milliseconds(20)) }
        let status = try #require(try await store.status().first)
        #expect(status.failure == nil && status.checkpoint == Self.total)
        try Self.checkStates(store, log: log)
        // Every record applied exactly once by the first build and once by the rebuild, across both stores.
        #expect(history.applied.withLock { $0.count } == 2 * Int(Self.total))
        await store.close()
    }

    @Test("a damaged stream-build marker stops the projection with a clear error instead of applying records twice")
    func damagedMarker() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try Self.openLog(fixture)
        defer { log.close() }
        try await append(log, Int(Self.total), stream: Self.stream)
        let gate = Gate()
        let history = StreamHistory(gate: gate)
        // A first build, held in its first chunk and closed: generation 2 has a marker.
        gate.arm(at: 1)
        let first = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [history], options: Self.options())
        await Self.closeWhenHeld(first, gate: gate)

        var options = EnvironmentOptions()
        options.maxDatabases = 16
        let environment = try Environment(path: fixture.projectionsPath, options: options)
        try environment.write { txn in
            let meta = try txn.openDatabase("projections-meta", create: false)
            let key = Array("gen/stream-history/2/stream-build".utf8)
            #expect(try txn.get(meta, key: key) != nil, "the first chunk left a marker")
            try txn.put(meta, key: key, value: [1, 2, 3])
        }
        environment.close()

        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [history], options: Self.options())
        var status = try #require(try await store.status().first)
        while status.failure == nil {
            try await Task.sleep(for: .milliseconds(10))
            status = try #require(try await store.status().first)
        }
        #expect(status.failure?.contains("stream-by-stream build marker has 3 bytes") == true, "\(status.failure ?? "")")
        #expect(status.rebuilding?.checkpoint == 0 && status.checkpoint == 0)
        await store.close()
    }
}
