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

/// `log_append` and `log_prepare` keep the plans each connection made on its first calls, made
/// while the tables were empty. The server's own counters show that those plans use the indexes.
@Suite("PostgreSQL appends look records and claims up by key", .integration)
struct PlanTests {
    private static func event(_ id: UUID = .timeOrdered()) -> ProposedEvent {
        ProposedEvent(eventID: id, type: "test.event", payload: Data("x".utf8))
    }

    @Test("appends, claims, releases, refusals and retries on a log created empty never scan the records or the claims whole")
    func noSequentialScans() async throws {
        let server = try await PostgresServer.start(name: "plans")
        defer { server.remove() }
        let log = try await PostgresEventLog.open(server.url(schema: "plans"))
        var written = 0
        for index in 0..<40 {
            let stream = "account-\(index)"
            _ = try await log.append([Self.event()], to: stream, expectedVersion: .noStream, claims: ["user:\(index)"], releases: [])
            _ = try await log.append([Self.event(), Self.event()], to: stream, expectedVersion: .exact(1), claims: [], releases: [])
            written += 3
        }
        // A claim moves: released by one stream, taken by another.
        _ = try await log.append([Self.event()], to: "account-0", expectedVersion: .exact(3), claims: [], releases: ["user:0"])
        _ = try await log.append([Self.event()], to: "account-41", expectedVersion: .noStream, claims: ["user:0"], releases: [])
        written += 2
        // Refused: a wrong expected version and a claim another stream holds.
        await #expect(throws: EventLogError.self) {
            _ = try await log.append([Self.event()], to: "account-1", expectedVersion: .exact(1), claims: [], releases: [])
        }
        await #expect(throws: EventLogError.self) {
            _ = try await log.append([Self.event()], to: "account-42", expectedVersion: .noStream, claims: ["user:2"], releases: [])
        }
        // A retry of a stored event id gets its position back and writes nothing.
        let id = UUID.timeOrdered()
        let first = try await log.append([Self.event(id)], to: "account-43", expectedVersion: .noStream, claims: [], releases: [])
        let retry = try await log.append([Self.event(id)], to: "account-43", expectedVersion: .noStream, claims: [], releases: [])
        #expect(retry.positions == first.positions)
        written += 1
        #expect(try await log.lastPosition() == UInt64(written))
        await log.close()

        // Building an index reads its table once, so creating the tables counted one sequential
        // scan per index; nothing else may add one. A server process flushes its counters when
        // its connection ends: wait until every count is in.
        let indexes =
            "SELECT count(*) FILTER (WHERE tablename = 'log_records'), count(*) FILTER (WHERE tablename = 'log_claims') FROM pg_indexes WHERE schemaname = 'plans'"
        let built = try await server.psql(indexes).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").map { Int($0) ?? -1 }
        #expect(built == [3, 1])
        let counters = "SELECT relname, n_tup_ins, seq_scan, idx_scan FROM pg_stat_user_tables WHERE schemaname = 'plans' ORDER BY relname"
        var rows: [String: [Int]] = [:]
        for _ in 0..<200 {
            let printed = try await server.psql(counters)
            rows = Dictionary(
                uniqueKeysWithValues: printed.split(separator: "\n").map { line in
                    let fields = line.split(separator: "|")
                    return (String(fields[0]), fields.dropFirst().map { Int($0) ?? -1 })
                })
            if let records = rows["log_records"], let claims = rows["log_claims"], records[0] == written, records[1] >= built[0],
                claims[1] >= built[1]
            {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let records = try #require(rows["log_records"])
        let claims = try #require(rows["log_claims"])
        #expect(records[0] == written)
        #expect(records[1] == built[0], "sequential scans of log_records: \(records[1]), \(built[0]) of them index builds")
        #expect(claims[1] == built[1], "sequential scans of log_claims: \(claims[1]), \(built[1]) of them index builds")
        // The checks did run, through the indexes.
        #expect(records[2] > written && claims[2] > 0)
    }
}
