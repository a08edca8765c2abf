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

/// Each job the runner gives the store's thread is a hop there and back: two thread wake-ups on
/// the path of every command that waits for its projection (a sign-in, a change). The usual
/// round, with no generation to build, start or drop, makes one: every projection's batch in one
/// job (issue 62).
@Suite("Hops to the projection store's thread")
struct StoreThreadHopTests {
    static func jobs(_ fixture: Fixture) -> Int64 {
        TestMetricsBackend.counterTotal("projection_store_thread_jobs", [("path", fixture.projectionsPath)])
    }

    @Test("an append applied by two projections costs one job on the store's thread, not three")
    func oneJobAnAppend() async throws {
        _ = TestMetricsBackend.shared  // before the store makes its metrics
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts(), StreamCounts(name: "other")])
        let first = try await log.append(ProposedEvent(type: "t", payload: Data("first".utf8)), to: "s")
        try await store.waitUntilApplied("stream-counts", position: first.positions.upperBound)
        try await store.waitUntilApplied("other", position: first.positions.upperBound)
        // Settled: the runner waits for the next commit.
        try await Task.sleep(for: .milliseconds(20))
        let before = Self.jobs(fixture)
        let appends = 40
        for index in 0..<appends {
            let result = try await log.append(ProposedEvent(type: "t", payload: Data("\(index)".utf8)), to: "s\(index % 3)")
            try await store.waitUntilApplied("stream-counts", position: result.positions.upperBound)
            try await store.waitUntilApplied("other", position: result.positions.upperBound)
            // The round after the batch finds nothing to apply; its end is waited for, so that
            // every append starts a round of its own.
            try await Task.sleep(for: .milliseconds(2))
        }
        let jobs = Self.jobs(fixture) - before
        // One a round; a round that starts (or drops) nothing made two more before.
        #expect(jobs >= Int64(appends) && jobs <= Int64(appends) + 2, "\(jobs) jobs on the store's thread for \(appends) appends")
        #expect(try StreamCounts.count("s0", in: store, name: "other") == 14)
        await store.close()
    }
}
