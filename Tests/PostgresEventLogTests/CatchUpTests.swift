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

/// A PostgreSQL subscription catches up in full batches, then goes live.
@Suite("A subscription on PostgreSQL catches up in full batches, then goes live", .integration)
struct CatchUpTests {
    private static func appends(_ count: Int, from first: Int) -> [StreamAppend] {
        (first..<(first + count)).map { index in
            StreamAppend(
                streamID: "stream-\(index % 37)", events: [ProposedEvent(type: "test.event", payload: Data("\(index)".utf8))],
                expectedVersion: .any)
        }
    }

    @Test("full batches while catching up, then live records: every position once, in order, with its own payload")
    func catchUpThenLive() async throws {
        let server = try await PostgresServer.start(name: "catchup")
        defer { server.remove() }
        let log = try await PostgresEventLog.open(server.url(schema: "catchup"))
        for outcome in await log.appendBatch(Self.appends(1_050, from: 0)) { _ = try outcome.get() }

        var seen: [RecordedEvent] = []
        var batchSizes: [Int] = []
        for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 100) {
            seen += batch
            batchSizes.append(batch.count)
            // Caught up: append more, which the subscription must deliver live.
            if seen.count == 1_050 {
                for outcome in await log.appendBatch(Self.appends(5, from: 1_050)) { _ = try outcome.get() }
            }
            if seen.count >= 1_055 { break }
        }
        #expect(seen.map(\.position) == Array(1...1_055))
        #expect(seen.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<1_055).map { "\($0)" })
        // Ten full batches, then the rest.
        #expect(Array(batchSizes.prefix(10)) == Array(repeating: 100, count: 10))

        // A consumer that stops after a full batch: the log still serves and closes.
        for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 100) {
            #expect(batch.count == 100)
            break
        }
        #expect(try await log.lastPosition() == 1_055)
        await log.close()
    }

    @Test("reading ahead while four writers append: the whole log and one stream, each record once and in order, across the switch to live")
    func readAheadWhileWriting() async throws {
        let server = try await PostgresServer.start(name: "readahead")
        defer { server.remove() }
        let log = try await PostgresEventLog.open(server.url(schema: "readahead"))
        // Exactly seven batches of 100 at first: the reads ahead of the last one find nothing.
        for outcome in await log.appendBatch(Self.appends(700, from: 0)) { _ = try outcome.get() }
        let total = 700 + 4 * 60
        let (whole, stream) = try await withThrowingTaskGroup(of: [RecordedEvent].self) { group -> ([RecordedEvent], [RecordedEvent]) in
            for writer in 0..<4 {
                group.addTask {
                    for index in 0..<60 {
                        let event = ProposedEvent(type: "test.event", payload: Data("w\(writer)-\(index)".utf8))
                        _ = try await log.append([event], to: "stream-\((writer * 60 + index) % 37)", expectedVersion: .any, claims: [], releases: [])
                    }
                    return []
                }
            }
            var whole: [RecordedEvent] = []
            for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 100) {
                whole += batch
                if whole.count >= total { break }
            }
            try await group.waitForAll()
            var stream: [RecordedEvent] = []
            let expected = try await log.streamVersion("stream-3") ?? 0
            for try await batch in log.subscribeBatches(after: 0, stream: "stream-3", batchSize: 3) {
                stream += batch
                if UInt64(stream.count) >= expected { break }
            }
            return (whole, stream)
        }
        #expect(whole.map(\.position) == Array(1...UInt64(total)))
        #expect(try await log.read(from: 1, direction: .forward, limit: total).map(\.eventID) == whole.map(\.eventID))
        #expect(stream.map(\.streamVersion) == Array(1...UInt64(stream.count)))
        #expect(stream.count == 19 + 7)
        #expect(Set(stream.map(\.streamID)) == ["stream-3"])
        await log.close()
    }
}
