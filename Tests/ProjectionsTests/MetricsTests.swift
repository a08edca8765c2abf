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

@Suite("Metrics: what operators see through swift-metrics")
struct MetricsTests {
    @Test("appends report their duration, commits their duration and group size; projections their lag and rebuild progress")
    func reported() async throws {
        let metrics = TestMetricsBackend.shared
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask { _ = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s\(writer % 4)") }
            }
            try await group.waitForAll()
        }
        try await store.waitUntilApplied("stream-counts", position: 16)
        try await store.rebuild("stream-counts")

        let logDimension = [("log", log.path)]
        let appends = try metrics.expectTimer("eventlog_append_duration", logDimension)
        #expect(appends.values.count == 16 && appends.values.allSatisfy { $0 > 0 })
        let groups = try metrics.expectRecorder("eventlog_commit_events", logDimension)
        #expect(groups.values.reduce(0, +) == 16 && !groups.values.isEmpty)
        #expect(try metrics.expectTimer("eventlog_commit_duration", logDimension).values.count == groups.values.count)
        let dimensions = [("projection", "stream-counts"), ("path", fixture.projectionsPath)]
        #expect(try metrics.expectGauge("projection_lag", dimensions).lastValue == 0)
        #expect(try metrics.expectGauge("projection_rebuild_progress", dimensions).lastValue == 1)
        await store.close()
    }
}
