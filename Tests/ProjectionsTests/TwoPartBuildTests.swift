//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import MetricsTestKit
import Projections
import Synchronization
import TestSupport
import TestTiers
import Testing

/// Per stream, the records applied and the last version, kept for the batch and written in
/// `finishBatch` (it only reads in `apply`, as the details cache does). A version that does not
/// follow the last one, or the record named by `failAt`, stops it. It notes the threads that
/// applied records.
struct BatchedStreamCounts: Projection {
    let threads = Threads()
    var failAt: (stream: String, version: UInt64)?
    var name: String { "batched-counts" }
    var fingerprint: String { "batched-counts-v1" }
    var databaseNames: [String] { ["counts"] }
    var buildsStreamByStream: Bool { true }

    func makeBatchState() -> [String: (count: UInt64, last: UInt64)] { [:] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout [String: (count: UInt64, last: UInt64)]) throws {
        threads.note()
        let stream = record.streamID
        if let failAt, failAt.stream == stream, failAt.version == record.streamVersion {
            throw TestFailure(message: "refused \(stream) version \(record.streamVersion)")
        }
        let (count, last) = try batch[stream] ?? state.get("counts", key: Array(stream.utf8)).map(StreamHistory.decode) ?? (0, 0)
        guard record.streamVersion == last + 1 else {
            throw TestFailure(message: "\(stream) version \(record.streamVersion) after \(last)")
        }
        batch[stream] = (count + 1, record.streamVersion)
    }

    func finishBatch(_ batch: inout [String: (count: UInt64, last: UInt64)], state: ProjectionState) throws {
        for (stream, entry) in batch {
            try state.put("counts", key: Array(stream.utf8), value: BigEndian.bytes(entry.count) + BigEndian.bytes(entry.last))
        }
        batch.removeAll()
    }

    /// The threads that applied records, by their `pthread_self` value.
    final class Threads: Sendable {
        private let seen = Mutex<Set<UInt>>([])
        func note() {
            let current = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(bitPattern: UInt(pthread_self()))))
            seen.withLock { _ = $0.insert(current) }
        }
        var count: Int { seen.withLock { $0.count } }
    }

    static func read(_ stream: String, in store: ProjectionStore) throws -> (count: UInt64, last: UInt64)? {
        try store.read("batched-counts") { state in try state.get("counts", key: Array(stream.utf8)).map(StreamHistory.decode) }
    }
}

/// ``StreamHistory`` for a projection that ignores a failed write (`try?`): on the lane thread
/// its writes are refused without it noticing, so only the state's count of refused writes tells.
struct SwallowingHistory: Projection {
    /// How many of its writes were refused (and swallowed).
    let refusals = RefusalCount()
    var name: String { "swallowing-history" }
    var fingerprint: String { "swallowing-history-v1" }
    var databaseNames: [String] { ["history"] }
    var buildsStreamByStream: Bool { true }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        let key = record.withStreamIDBytes { Array($0) }
        let (count, last) = try state.get("history", key: key).map(StreamHistory.decode) ?? (0, 0)
        if record.streamVersion == last + 1 {
            do {
                try state.put("history", key: key, value: BigEndian.bytes(count + 1) + BigEndian.bytes(record.streamVersion))
            } catch {
                refusals.count.withLock { $0 += 1 }
            }
        }
    }
}

/// A count shared by the copies of a projection value.
final class RefusalCount: Sendable {
    let count = Mutex(0)
}

/// A rebuild's chunks of at least 8,192 records are read in two parts at once: the second (the
/// streams after the one that holds the chunk's middle record) on a thread of its own, in a read
/// transaction, then written by the chunk's transaction after the first.
@Suite("Rebuilds read in two parts at once")
struct TwoPartBuildTests {
    /// 24,000 records over 600 streams of uneven lengths, interleaved.
    static let total = 24_000
    static func stream(_ index: Int) -> String { String(format: "s%03d", (index * 13 + index / 600) % 600) }

    static func options() -> ProjectionStoreOptions {
        var options = ProjectionStoreOptions()
        options.batchSize = 64
        options.catchUpBatchSize = 16_384
        return options
    }

    static func makeLog(_ fixture: Fixture) async throws -> EventLog {
        var options = EventLogOptions()
        options.sync = .relaxed
        options.indexTailLimit = 1_000
        let log = try EventLog(path: fixture.logPath, options: options)
        try await append(log, total, stream: stream)
        return log
    }

    @Test("a first build and a rebuild in two parts fold every stream once, in version order, on two threads", .integration)
    func twoParts() async throws {
        let metrics = TestMetricsBackend.shared  // bootstrapped before the store makes its metrics
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try await Self.makeLog(fixture)
        defer { log.close() }
        let counts = try StreamBuildTests.expected(log)
        #expect(counts.count == 600)
        #expect(try log.streamOrderLimit() == 24_000)

        let projection = BatchedStreamCounts()
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [projection], options: Self.options())
        try await store.waitUntilApplied("batched-counts", position: UInt64(Self.total))
        #expect(projection.threads.count == 2, "the worker and the lane thread applied records")
        try StreamBuildTests.checkStates(store, log: log, projection: "batched-counts", database: "counts")
        // Operators see the chunks read in two parts (the metric is this store's: its path is new).
        let chunks = try metrics.expectCounter(
            "projection_chunks_read_in_two_parts", [("projection", "batched-counts"), ("path", fixture.projectionsPath)])
        let firstBuild = chunks.totalValue
        #expect(firstBuild >= 1)
        try await store.rebuild("batched-counts")
        let status = try #require(try await store.status().first)
        #expect(status.failure == nil && status.checkpoint == UInt64(Self.total) && status.rebuilding == nil)
        try StreamBuildTests.checkStates(store, log: log, projection: "batched-counts", database: "counts", "after the rebuild, ")
        #expect(chunks.totalValue >= firstBuild + 1)
        await store.close()
    }

    @Test("a projection that fails in the second part stops at that record, and nothing of its chunk is kept", .integration)
    func failureInSecondPart() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try await Self.makeLog(fixture)
        defer { log.close() }
        // A stream ten streams after the cut of the first chunk (16,384 records, cut after the
        // stream holding its 8,192nd): in the second part.
        let split = try #require(try log.streamSplit(after: nil, records: 8_192, through: UInt64(Self.total)))
        let splitIndex = try #require(Int(String(decoding: split.dropFirst(), as: UTF8.self)))
        #expect(splitIndex > 150 && splitIndex < 250)
        let stream = String(format: "s%03d", splitIndex + 10)
        let failing = try await log.readStream(stream)
        let position = try #require(failing.count >= 3 ? failing[2].position : nil)
        var projection = BatchedStreamCounts()
        projection.failAt = (stream, 3)
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [projection], options: Self.options())
        var status = try #require(try await store.status().first)
        for _ in 0..<500 where status.failure == nil {
            try await Task.sleep(for: .milliseconds(20))
            status = try #require(try await store.status().first)
        }
        #expect(status.failure == "projection \"batched-counts\" stopped at position \(position): refused \(stream) version 3")
        #expect(projection.threads.count == 2)
        // The first build never took over: the serving generation is still empty.
        #expect(try BatchedStreamCounts.read("s001", in: store) == nil)
        #expect(try BatchedStreamCounts.read(stream, in: store) == nil)
        await store.close()
    }

    @Test("a projection that writes while applying and ignores the error is still built right", .integration)
    func swallowedWrites() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try await Self.makeLog(fixture)
        defer { log.close() }
        let projection = SwallowingHistory()
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [projection], options: Self.options())
        try await store.waitUntilApplied("swallowing-history", position: UInt64(Self.total))
        try StreamBuildTests.checkStates(store, log: log, projection: "swallowing-history")
        // Its writes in a chunk's second part were refused (that part only reads) and swallowed:
        // the chunk was read again in one part, so the history is still right.
        #expect(projection.refusals.count.withLock { $0 } > 0, "no write was refused: the second part never ran")
        await store.close()
    }

    @Test("a projection that writes while applying is built right: its chunks are read in one part from the first write on", .integration)
    func writesWhileApplying() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try await Self.makeLog(fixture)
        defer { log.close() }
        let history = StreamHistory(gate: Gate())
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [history], options: Self.options())
        try await store.waitUntilApplied("stream-history", position: UInt64(Self.total))
        let applied = history.applied.withLock { $0 }
        #expect(applied.count == Self.total, "every record applied once by the writer")
        #expect(Set(applied.map(\.position)).count == Self.total)
        try StreamBuildTests.checkStates(store, log: log)
        let status = try #require(try await store.status().first)
        #expect(status.failure == nil && status.storageError == nil)
        await store.close()
    }
}
