//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import PostgresEventLog
import TestSupport
import TestTiers
import Testing

@Suite("Batches of appends on PostgreSQL", .integration)
struct BatchTests {
    @Test("200 appends of 5 events in one batch, twice, land in order with an outcome each; a bad one fails alone")
    func largeBatches() async throws {
        let server = try await PostgresServer.start(name: "batch")
        defer { server.remove() }
        let log = try await PostgresEventLog.open(server.url(schema: "batch"))
        for round in 0..<2 {
            var appends = (0..<200).map { index in
                StreamAppend(
                    streamID: "stream-\(index)", events: (0..<5).map { _ in ProposedEvent(type: "test.event", payload: Data("x".utf8)) },
                    expectedVersion: round == 0 ? .noStream : .exact(5))
            }
            // One append with a stale expected version: it alone fails.
            appends[17] = StreamAppend(streamID: "stream-17", events: appends[17].events, expectedVersion: .exact(99))
            let outcomes = await log.appendBatch(appends)
            #expect(outcomes.count == 200)
            var next = UInt64(round * 995) + 1
            for (index, outcome) in outcomes.enumerated() {
                if index == 17 {
                    #expect(throws: EventLogError.self) { try outcome.get() }
                    continue
                }
                let result = try outcome.get()
                #expect(result.positions == next...(next + 4), "append \(index) of round \(round)")
                next += 5
            }
        }
        #expect(try await log.lastPosition() == 1_990)
        #expect(try await log.verify(progress: nil).isIntact)
        await log.close()
    }
}
