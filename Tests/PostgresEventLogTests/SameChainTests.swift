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

@Suite("The PostgreSQL log keeps the LMDB log's records and chain", .integration)
struct SameChainTests {
    /// The same 60 events, with their ids and times fixed, for both backends.
    static let events: [(stream: String, event: ProposedEvent, time: Date)] = (0..<60).map { index in
        let event = ProposedEvent(
            eventID: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", index))!, type: "test.event-\(index % 3)",
            schemaVersion: UInt32(1 + index % 2),
            metadata: EventMetadata(actor: "tester", correlationID: "c\(index)", extra: ["note": "é\(index)"]),
            payload: Data((0..<(index * 7)).map { UInt8(truncatingIfNeeded: $0 &* 31) }))
        return ("stream-\(index % 7)", event, Date(timeIntervalSince1970: 1_800_000_000 + Double(index)))
    }

    @Test("the same events give the same positions, stream versions and head hash on LMDB and PostgreSQL, and psql alone re-checks the chain")
    func sameHeadHash() async throws {
        let server = try await PostgresServer.start(name: "chain")
        defer { server.remove() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chain-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let lmdb = try EventLog(path: folder.path)
        let postgres = try await PostgresEventLog.open(server.url(schema: "chain"))
        for (stream, event, time) in Self.events {
            let a = try await lmdb.appendImported([(event, time)], to: stream, expectedVersion: .any, claims: [], releases: [])
            let b = try await postgres.appendImported([(event, time)], to: stream, expectedVersion: .any, claims: [], releases: [])
            #expect(a == b)
        }
        let lmdbRecords = try await lmdb.read(from: 1, limit: 100)
        let postgresRecords = try await postgres.read(from: 1, limit: 100)
        #expect(lmdbRecords == postgresRecords)
        let lmdbReport = try await lmdb.verify(progress: nil)
        let postgresReport = try await postgres.verify(progress: nil)
        #expect(lmdbReport.isIntact && postgresReport.isIntact)
        #expect(lmdbReport.headHash == postgresReport.headHash)
        #expect(postgresReport.recordsChecked == 60)

        // POSTGRES.md's queries: no broken link, no gap, the head agrees.
        let brokenLinks = try await server.psql(
            """
            SET search_path = chain;
            SELECT position FROM (SELECT position, hash, log_record_body(r) AS body,
                lag(hash, 1, '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea) OVER (ORDER BY position) AS previous
                FROM log_records r) chained WHERE sha256(previous || body) <> hash ORDER BY position;
            """)
        #expect(brokenLinks.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(brokenLinks)")
        let gapFree = try await server.psql("SELECT count(*) = max(position) AND min(position) = 1 FROM chain.log_records")
        #expect(gapFree.trimmingCharacters(in: .whitespacesAndNewlines) == "t")
        let headAgrees = try await server.psql(
            "SELECT (SELECT hash FROM chain.log_records ORDER BY position DESC LIMIT 1) = hash FROM chain.log_head")
        #expect(headAgrees.trimmingCharacters(in: .whitespacesAndNewlines) == "t")

        // A changed payload is found by psql's check and by verify.
        _ = try await server.psql("UPDATE chain.log_records SET payload = payload || '\\x00'::bytea WHERE position = 31")
        let afterTamper = try await server.psql(
            """
            SET search_path = chain;
            SELECT position FROM (SELECT position, hash, log_record_body(r) AS body,
                lag(hash, 1, '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea) OVER (ORDER BY position) AS previous
                FROM log_records r) chained WHERE sha256(previous || body) <> hash ORDER BY position;
            """)
        #expect(afterTamper.split(separator: "\n").first.map(String.init) == "31")
        #expect(try await postgres.verify(progress: nil).problem?.position == 31)
        await lmdb.close()
        await postgres.close()
    }
}
