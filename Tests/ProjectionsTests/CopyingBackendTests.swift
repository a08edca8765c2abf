//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Projections
import TestSupport
import Testing

/// The LMDB log seen only through `EventLogBackend`: it does not offer the in-place scan, so the
/// runner takes the path every other backend takes (fetch a batch, then apply it in a transaction).
final class ProtocolOnlyLog: ForwardingLog, @unchecked Sendable {}

@Suite("Projections on a backend without the in-place scan")
struct CopyingBackendTests {
    @Test("the runner fetches batches outside its transaction: catch-up, live appends and a blue/green rebuild give the same counts")
    func fetchedBatches() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let lmdb = try fixture.openLog()
        let log = ProtocolOnlyLog(lmdb)
        #expect(!(log is any InPlaceScanning))
        for index in 0..<2_500 {
            _ = try await log.append(
                [ProposedEvent(type: "t", payload: Data("\(index)".utf8))], to: "s\(index % 5)", expectedVersion: .any, claims: [], releases: [])
        }
        var options = ProjectionStoreOptions()
        options.batchSize = 700
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts()], options: options)
        try await store.waitUntilApplied("stream-counts", position: 2_500)
        for stream in 0..<5 { #expect(try StreamCounts.count("s\(stream)", in: store) == 500) }
        for _ in 0..<20 {
            let result = try await log.append(
                [ProposedEvent(type: "t", payload: Data())], to: "live", expectedVersion: .any, claims: [], releases: [])
            try await store.waitUntilApplied("stream-counts", position: result.positions.upperBound)
        }
        #expect(try StreamCounts.count("live", in: store) == 20)
        try await store.rebuild("stream-counts")
        let status = try #require(try await store.status().first)
        #expect(status.generation == 2)
        #expect(status.checkpoint == 2_520)
        #expect(try StreamCounts.count("s3", in: store) == 500)
        #expect(try StreamCounts.count("live", in: store) == 20)
        await store.close()
        await log.close()
    }

    @Test("a failing record stops the projection at its position on this path too")
    func failureStops() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = ProtocolOnlyLog(try fixture.openLog())
        for index in 0..<10 {
            _ = try await log.append(
                [ProposedEvent(type: "t", payload: Data("p\(index)".utf8))], to: "s", expectedVersion: .any, claims: [], releases: [])
        }
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [StreamCounts(failAtPayload: "p6")])
        await #expect(throws: ProjectionError.failed(projection: "stream-counts", position: 7, reason: "cannot apply p6")) {
            try await store.waitUntilApplied("stream-counts", position: 10)
        }
        #expect(try StreamCounts.count("s", in: store) == 6)
        #expect(try await store.status().first?.failure == "projection \"stream-counts\" stopped at position 7: cannot apply p6")
        await store.close()
        await log.close()
    }
}
