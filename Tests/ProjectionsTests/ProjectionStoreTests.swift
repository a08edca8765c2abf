//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Dispatch
import EventLog
import EventLogProtocol
import Foundation
import LMDB
import Projections
import Synchronization
import Testing

/// Counts events per stream (optionally only of one type): wrong if any record is applied twice or skipped.
struct StreamCounts: Projection {
    var name = "stream-counts"
    var onlyType: String?
    var failAtPayload: String?
    var fingerprint: String { "counts-v1-\(onlyType ?? "all")" }
    var databaseNames: [String] { ["counts"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        if let failAtPayload, record.withPayload({ Data($0) }) == Data(failAtPayload.utf8) {
            throw TestFailure(message: "cannot apply \(failAtPayload)")
        }
        if let onlyType, record.type != onlyType { return }
        let key = record.withStreamIDBytes { Array($0) }
        let count = try state.get("counts", key: key).map { $0.withUnsafeBytes { BigEndian.uint64($0) } } ?? 0
        try state.put("counts", key: key, value: BigEndian.bytes(count + 1))
    }

    static func count(_ stream: String, in store: ProjectionStore, name: String = "stream-counts") throws -> UInt64 {
        try store.read(name) { state in
            try state.get("counts", key: Array(stream.utf8)).map { $0.withUnsafeBytes { BigEndian.uint64($0) } } ?? 0
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

struct Fixture {
    let directory: URL
    var logPath: String { directory.appendingPathComponent("log").path }
    var projectionsPath: String { directory.appendingPathComponent("projections").path }

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("projections-\(UUID().uuidString)")
    }

    func openLog() throws -> EventLog {
        var options = EventLogOptions()
        options.sync = .relaxed
        return try EventLog(path: logPath, options: options)
    }

    func cleanup() { try? FileManager.default.removeItem(at: directory) }
}

func append(_ log: EventLog, _ count: Int, stream: (Int) -> String, type: (Int) -> String = { _ in "t" }) async throws {
    for index in 0..<count {
        _ = try await log.append(ProposedEvent(type: type(index), payload: Data("\(index)".utf8)), to: stream(index))
    }
}

@Suite("Projection store")
struct ProjectionStoreTests {
    @Test("catches up with the log, follows live appends, and waitUntilApplied gives read-your-writes")
    func catchUpAndFollow() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        try await append(log, 300, stream: { "s\($0 % 3)" })
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        try await store.waitUntilApplied("stream-counts", position: 300)
        #expect(try StreamCounts.count("s0", in: store) == 100)
        for index in 0..<50 {
            let result = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "live")
            try await store.waitUntilApplied("stream-counts", position: result.positions.upperBound)
            #expect(try StreamCounts.count("live", in: store) == UInt64(index + 1))
        }
        let status = try #require(try await store.status().first)
        #expect(status.checkpoint == 350)
        #expect(status.lag == 0)
        #expect(status.generation == 1)
        await store.close()
    }

    @Test("a reopened store resumes from its checkpoint: nothing applied twice, nothing skipped")
    func resume() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        try await append(log, 200, stream: { "s\($0 % 2)" })
        var store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        try await store.waitUntilApplied("stream-counts", position: 200)
        await store.close()
        try await append(log, 100, stream: { "s\($0 % 2)" })
        store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        #expect(try await store.status().first?.checkpoint == 200)
        try await store.waitUntilApplied("stream-counts", position: 300)
        #expect(try StreamCounts.count("s0", in: store) == 150)
        #expect(try StreamCounts.count("s1", in: store) == 150)
        await store.close()
    }

    @Test("a rebuild is blue/green: held halfway, the old generation serves complete reads; then the new one takes over")
    func blueGreenRebuild() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let (gate, store) = try await gatedCounts(fixture, log: log, catchUpBatchSize: 250)
        // The rebuild stops inside its batch that applies position 2,500, until the test opens the gate.
        gate.arm(at: 2_500)
        let reports = Mutex<[(UInt64, UInt64)]>([])
        let rebuild = Task {
            try await store.rebuild("stream-counts") { applied, target in reports.withLock { $0.append((applied, target)) } }
        }
        await gate.waitUntilReached()
        let halfway = try #require(try await store.status().first)
        #expect(halfway.generation == 1)
        #expect(halfway.rebuilding.map { $0.checkpoint > 0 && $0.checkpoint < 2_500 } == true, "\(String(describing: halfway.rebuilding))")
        // Reads come from the complete old generation, not from the half-built new one.
        for stream in 0..<5 { #expect(try StreamCounts.count("s\(stream)", in: store) == 1_000) }
        gate.open()
        _ = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s0")
        try await rebuild.value
        try await store.waitUntilApplied("stream-counts", position: 5_001)
        let status = try #require(try await store.status().first)
        #expect(status.generation == 2)
        #expect(status.rebuilding == nil)
        #expect(try StreamCounts.count("s0", in: store) == 1_001)
        #expect(try StreamCounts.count("s4", in: store) == 1_000)
        let last = reports.withLock { $0.last }
        #expect(last.map { $0.0 >= 5_000 } ?? false)
        await store.close()
    }

    @Test("a rebuild far behind applies large batches, and ends one early (at a multiple of 1,024) for a command waiting on the serving generation")
    func rebuildGivesWay() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let (gate, store) = try await gatedCounts(fixture, log: log, catchUpBatchSize: 100_000)
        let reports = Mutex<[UInt64]>([])
        // Unhindered, the rebuild is one batch of 5,000 records.
        try await store.rebuild("stream-counts") { applied, _ in reports.withLock { $0.append(applied) } }
        #expect(reports.withLock { $0 } == [5_000])
        reports.withLock { $0 = [] }
        // Held at 1,500, it gets a waiting command; it ends its batch at 2,048 and the command is answered.
        gate.arm(at: 1_500)
        let rebuild = Task {
            try await store.rebuild("stream-counts") { applied, _ in reports.withLock { $0.append(applied) } }
        }
        await gate.waitUntilReached()
        _ = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s0")
        let command = Task { try await store.waitUntilApplied("stream-counts", position: 5_001) }
        while store.waitingCommands == 0 { try await Task.sleep(for: .milliseconds(1)) }
        gate.open()
        try await command.value
        #expect(reports.withLock { $0.first } == 2_048)
        #expect(try StreamCounts.count("s0", in: store) == 1_001)
        try await rebuild.value
        let status = try #require(try await store.status().first)
        #expect(status.generation == 3)
        #expect(status.rebuilding == nil)
        #expect(try StreamCounts.count("s0", in: store) == 1_001)
        #expect(try StreamCounts.count("s4", in: store) == 1_000)
        await store.close()
    }

    @Test("a changed fingerprint rebuilds by itself at open, with the new logic")
    func fingerprintChange() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        try await append(log, 100, stream: { _ in "s" }, type: { $0 < 30 ? "a" : "b" })
        var store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        try await store.waitUntilApplied("stream-counts", position: 100)
        #expect(try StreamCounts.count("s", in: store) == 100)
        await store.close()

        // The rebuild is held at record 50 while the status is read: unheld, it could be done first.
        let gate = Gate()
        gate.arm(at: 50)
        store = try ProjectionStore(
            path: fixture.projectionsPath, log: log, projections: [GatedCounts(gate: gate, counts: StreamCounts(onlyType: "a"))])
        await gate.waitUntilReached()
        let opened = try await store.status().first
        gate.open()
        #expect(opened?.generation == 1)
        #expect(opened?.rebuilding?.generation == 2)
        try await waitForGeneration(2, of: store)
        #expect(try await store.status().first?.generation == 2)
        #expect(try StreamCounts.count("s", in: store) == 30)
        await store.close()
        // Once more with the same fingerprint: no rebuild, the retired generation is gone.
        store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts(onlyType: "a")])
        #expect(try await store.status().first?.rebuilding == nil)
        #expect(try await store.status().first?.generation == 2)
        #expect(try StreamCounts.count("s", in: store) == 30)
        await store.close()
    }

    @Test("a projection that throws stops at that record, reports it, and fails its waiters")
    func failure() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        try await append(log, 10, stream: { _ in "s" })
        let store = try ProjectionStore(
            path: fixture.projectionsPath, log: log,
            projections: [StreamCounts(failAtPayload: "6"), StreamCounts(name: "healthy")])
        await #expect(throws: ProjectionError.failed(projection: "stream-counts", position: 7, reason: "cannot apply 6")) {
            try await store.waitUntilApplied("stream-counts", position: 10)
        }
        try await store.waitUntilApplied("healthy", position: 10)
        #expect(try StreamCounts.count("s", in: store, name: "healthy") == 10)
        #expect(try StreamCounts.count("s", in: store) == 6)
        let status = try await store.status()
        #expect(status.first?.checkpoint == 6)
        #expect(status.first?.failure?.contains("position 7") == true)
        await #expect(throws: ProjectionError.unknownProjection("nope")) { try await store.waitUntilApplied("nope", position: 1) }
        await store.close()
    }

    @Test(
        "the log lost records the serving generation applied (a power cut after relaxed appends): a rebuild takes over at the log's end, and new records are applied",
        .timeLimit(.minutes(2)))
    func rebuildAfterLostRecords() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        // The log's files as a power cut leaves them: 100 records flushed, the 200 after them lost.
        var log = try fixture.openLog()
        try await append(log, 100, stream: { "s\($0 % 2)" })
        await log.close()
        let flushed = fixture.directory.appendingPathComponent("log-at-its-flush").path
        try FileManager.default.copyItem(atPath: fixture.logPath, toPath: flushed)
        log = try fixture.openLog()
        try await append(log, 200, stream: { "s\($0 % 2)" })
        var store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        try await store.waitUntilApplied("stream-counts", position: 300)
        await store.close()
        await log.close()
        try FileManager.default.removeItem(atPath: fixture.logPath)
        try FileManager.default.moveItem(atPath: flushed, toPath: fixture.logPath)

        log = try fixture.openLog()
        defer { log.close() }
        store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        #expect(try await store.status().first?.checkpoint == 300, "the serving generation is ahead of the log")
        // The rebuild used to wait for its generation to reach position 300, which the log no
        // longer has: for ever. A deadline turns such a wait into a failure.
        let reopened = store
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await reopened.rebuild("stream-counts") }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                throw TestFailure(message: "the rebuild did not take over within 30 s")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
        let status = try #require(try await store.status().first)
        #expect(status.generation == 2 && status.checkpoint == 100 && status.rebuilding == nil, "\(status)")
        #expect(try StreamCounts.count("s0", in: store) == 50)
        #expect(try StreamCounts.count("s1", in: store) == 50)
        // Appended where the lost records were, and applied.
        let appended = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s0")
        try await store.waitUntilApplied("stream-counts", position: appended.positions.upperBound)
        #expect(appended.positions.upperBound == 101)
        #expect(try StreamCounts.count("s0", in: store) == 51)
        await store.close()
    }
}

/// 5,000 records over five streams in `log`, and a store of ``GatedCounts`` in batches of 250
/// (and `catchUpBatchSize` while far behind) that has applied them all.
func gatedCounts(_ fixture: Fixture, log: EventLog, catchUpBatchSize: Int) async throws -> (Gate, ProjectionStore) {
    try await append(log, 5_000, stream: { "s\($0 % 5)" })
    var options = ProjectionStoreOptions()
    options.batchSize = 250
    options.catchUpBatchSize = catchUpBatchSize
    let gate = Gate()
    let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [GatedCounts(gate: gate)], options: options)
    try await store.waitUntilApplied("stream-counts", position: 5_000)
    return (gate, store)
}

/// Waits (at most `limit`) until the store's first projection is served by generation `number`;
/// the caller checks that it is.
func waitForGeneration(_ number: UInt32, of store: ProjectionStore, limit: Duration = .seconds(30)) async throws {
    let deadline = ContinuousClock.now + limit
    while try await store.status().first?.generation != number, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// Holds a projection's apply at one position until the test opens it (blocks the projections'
/// own thread, never the cooperative pool).
final class Gate: Sendable {
    private let position = Mutex<UInt64?>(nil)
    private let reached = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    func arm(at position: UInt64) { self.position.withLock { $0 = position } }

    /// Called by the projection for every record.
    func pass(_ at: UInt64) {
        guard position.withLock({ $0 == at ? true : false }) else { return }
        position.withLock { $0 = nil }
        reached.signal()
        opened.wait()
    }

    func waitUntilReached() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.reached.wait()
                continuation.resume()
            }
        }
    }

    func open() { opened.signal() }
}

/// ``StreamCounts`` with a gate.
struct GatedCounts: Projection {
    let gate: Gate
    var counts = StreamCounts()
    var name: String { counts.name }
    var fingerprint: String { counts.fingerprint }
    var databaseNames: [String] { counts.databaseNames }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        gate.pass(record.position)
        try counts.apply(record, to: state, batch: &batch)
    }
}
