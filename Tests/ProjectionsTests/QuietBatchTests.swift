//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Metrics
import MetricsTestKit
import Projections
import TestSupport
import Testing

/// Each projection commits its batches apart: a batch that writes nothing (records the projection
/// ignores) is not committed, so an append most projections ignore costs one flush, not one per
/// projection. Its checkpoint is stored by a later batch that writes, 4,096 records past the
/// stored one at the latest, and when the store closes.
@Suite("Quiet batches: a projection's batch that writes nothing commits nothing")
struct QuietBatchTests {
    static func quietBatches(_ projection: String, _ fixture: Fixture) -> Int64 {
        let dimensions = [("projection", projection), ("path", fixture.projectionsPath)]
        return TestMetricsBackend.counterTotal("projection_quiet_batches", dimensions)
    }

    @Test("ignored records commit nothing until 4,096 past the stored checkpoint; the close stores the rest; a reopen applies nothing again")
    func quietUntilTheSpan() async throws {
        _ = TestMetricsBackend.shared
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let projections = [StreamCounts(), StreamCounts(name: "only-x", onlyType: "x")]
        var store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: projections)
        // One record a batch: each append is applied before the next.
        for index in 0..<4_100 {
            let result = try await log.append(ProposedEvent(type: "t", payload: Data("\(index)".utf8)), to: "s\(index % 3)")
            try await store.waitUntilApplied("only-x", position: result.positions.upperBound)
            try await store.waitUntilApplied("stream-counts", position: result.positions.upperBound)
        }
        // The projection that writes for every record never had a quiet batch; the one that
        // ignores them all had one a record, but for the batch at 4,096 past its stored checkpoint.
        #expect(Self.quietBatches("stream-counts", fixture) == 0)
        #expect(Self.quietBatches("only-x", fixture) == 4_099)
        #expect(try StreamCounts.count("s0", in: store) == 1_367)
        #expect(try StreamCounts.count("s0", in: store, name: "only-x") == 0)

        // A record it writes for: committed, with its checkpoint.
        let written = try await log.append(ProposedEvent(type: "x", payload: Data()), to: "s0")
        try await store.waitUntilApplied("only-x", position: written.positions.upperBound)
        #expect(try StreamCounts.count("s0", in: store, name: "only-x") == 1)
        #expect(Self.quietBatches("only-x", fixture) == 4_099)

        // Ignored again, then closed: the close stores the checkpoint, and the reopened store has
        // nothing to apply again (no batch, quiet or not).
        for index in 0..<5 {
            let result = try await log.append(ProposedEvent(type: "t", payload: Data("late \(index)".utf8)), to: "s1")
            try await store.waitUntilApplied("only-x", position: result.positions.upperBound)
        }
        #expect(Self.quietBatches("only-x", fixture) == 4_104)
        try await store.waitUntilApplied("stream-counts", position: try log.lastPosition())
        await store.close()
        store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: projections)
        let head = try log.lastPosition()
        try await store.waitUntilApplied("only-x", position: head)
        try await store.waitUntilApplied("stream-counts", position: head)
        try await Task.sleep(for: .milliseconds(50))
        #expect(Self.quietBatches("only-x", fixture) == 4_104)
        let status = try await store.status()
        #expect(status.allSatisfy { $0.checkpoint == head })
        #expect(try StreamCounts.count("s1", in: store) == 1_372)
        await store.close()
    }
}
