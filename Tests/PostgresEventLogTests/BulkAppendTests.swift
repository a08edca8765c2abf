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

/// Groups of 100 records or more go through `log_append_bulk`, which leaves the checks of written
/// streams and event ids to the unique indexes: these tests make those checks fail and expect the
/// answers the lookups gave.
@Suite("Bulk appends on PostgreSQL", .integration)
struct BulkAppendTests {
    /// `streams` appends of 5 events each, to `bulk-0`, `bulk-1`, …, with fixed ids and times.
    static func batch(streams: Int, expected: ExpectedVersion, seed: Int) -> [StreamAppend] {
        (0..<streams).map { index in
            let events = (0..<5).map { number in
                ProposedEvent(
                    eventID: UUID(uuidString: String(format: "00000000-0000-4000-8000-%06x%06x", seed, index * 5 + number))!, type: "bulk.event",
                    payload: Data((0..<(index + number * 13)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) }))
            }
            let times = (0..<5).map { Date(timeIntervalSince1970: 1_800_000_000 + Double(seed * 1_000 + index * 5 + $0)) }
            return StreamAppend(streamID: "bulk-\(index)", events: events, timestamps: times, expectedVersion: expected)
        }
    }

    @Test("a bulk batch gives the positions, records and head hash the LMDB log gives")
    func sameAsLMDB() async throws {
        let server = try await PostgresServer.start(name: "bulk-same")
        defer { server.remove() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-same-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let lmdb = try EventLog(path: folder.path)
        let postgres = try await PostgresEventLog.open(server.url(schema: "bulk"))
        let first = ProposedEvent(type: "seed", payload: Data("seed".utf8))
        let time = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(
            try await lmdb.appendImported([(first, time)], to: "seed", expectedVersion: .noStream, claims: [], releases: [])
                == postgres.appendImported([(first, time)], to: "seed", expectedVersion: .noStream, claims: [], releases: []))
        for round in 0..<2 {
            let appends = Self.batch(streams: 40, expected: round == 0 ? .noStream : .exact(5), seed: round + 1)
            let lmdbOutcomes = try await lmdb.appendBatch(appends).map { try $0.get() }
            let postgresOutcomes = try await postgres.appendBatch(appends).map { try $0.get() }
            #expect(lmdbOutcomes == postgresOutcomes)
            #expect(postgresOutcomes.first?.positions.lowerBound == UInt64(2 + round * 200))
            #expect(postgresOutcomes.allSatisfy { $0.streamVersion == UInt64(5 + round * 5) && !$0.wasDuplicate })
        }
        #expect(postgres.appendPaths == AppendPaths(believed: 2, corrected: 0, locked: 1))
        #expect(try await postgres.lastPosition() == 401)
        #expect(try await lmdb.read(from: 1, limit: 500) == postgres.read(from: 1, limit: 500))
        let lmdbReport = try await lmdb.verify(progress: nil)
        let postgresReport = try await postgres.verify(progress: nil)
        #expect(lmdbReport.isIntact && postgresReport.isIntact)
        #expect(postgresReport.recordsChecked == 401)
        #expect(lmdbReport.headHash == postgresReport.headHash)
        await postgres.close()
    }

    @Test("a bulk batch decided on stale stream versions is refused by the index, then decided on the facts")
    func staleStreams() async throws {
        let server = try await PostgresServer.start(name: "bulk-stale")
        defer { server.remove() }
        let url = server.url(schema: "bulk")
        let writer = try await PostgresEventLog.open(url)
        _ = try await writer.append([ProposedEvent(type: "seed", payload: Data())], to: "seed")
        for outcome in await writer.appendBatch(Self.batch(streams: 30, expected: .noStream, seed: 1)) { _ = try outcome.get() }
        await writer.close()

        // A second process knows the head after its first append, but believes the streams new.
        let other = try await PostgresEventLog.open(url)
        _ = try await other.append([ProposedEvent(type: "seed", payload: Data())], to: "other")
        var appends = Self.batch(streams: 30, expected: .any, seed: 2)
        for index in 20..<30 { appends[index].expectedVersion = .noStream }
        let outcomes = await other.appendBatch(appends)
        var next: UInt64 = 153
        for (index, outcome) in outcomes.enumerated() {
            if index < 20 {
                let result = try outcome.get()
                #expect(result.positions == next...(next + 4) && result.streamVersion == 10, "append \(index)")
                next += 5
            } else {
                #expect(throws: EventLogError.wrongExpectedVersion(stream: "bulk-\(index)", expected: .noStream, actual: 5)) { try outcome.get() }
            }
        }
        #expect(other.appendPaths == AppendPaths(believed: 0, corrected: 1, locked: 1))
        #expect(try await other.lastPosition() == 252)
        #expect(try await other.streamVersion("bulk-0") == 10)
        #expect(try await other.streamVersion("bulk-25") == 5)
        #expect(try await other.verify(progress: nil).isIntact)
        await other.close()
    }

    @Test("a committed bulk batch sent again by a process that has not seen it is answered with its positions")
    func retriedBatch() async throws {
        let server = try await PostgresServer.start(name: "bulk-retry")
        defer { server.remove() }
        let url = server.url(schema: "bulk")
        let writer = try await PostgresEventLog.open(url)
        _ = try await writer.append([ProposedEvent(type: "seed", payload: Data())], to: "seed")
        let appends = Self.batch(streams: 30, expected: .noStream, seed: 3)
        let original = try await writer.appendBatch(appends).map { try $0.get() }
        await writer.close()

        let other = try await PostgresEventLog.open(url)
        _ = try await other.append([ProposedEvent(type: "seed", payload: Data())], to: "other")
        let again = try await other.appendBatch(appends).map { try $0.get() }
        #expect(again.map(\.positions) == original.map(\.positions))
        #expect(again.map(\.streamVersion) == original.map(\.streamVersion))
        let duplicates = again.filter(\.wasDuplicate).count
        #expect(duplicates == again.count)
        #expect(other.appendPaths == AppendPaths(believed: 0, corrected: 1, locked: 1))
        #expect(try await other.lastPosition() == 152)
        #expect(try await other.verify(progress: nil).isIntact)
        await other.close()
    }
}
