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

/// A log listens for the commits of other processes only while one of its subscribers waits.
@Suite("PostgreSQL commit notifications while subscribers wait", .integration)
struct ListenTests {
    /// How many server sessions last ran `LISTEN` (a session that stopped listening last ran `UNLISTEN`).
    private static func listening(_ server: PostgresServer) async throws -> Int {
        Int(
            try await server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'").trimmingCharacters(in: .whitespacesAndNewlines)
        )
            ?? -1
    }

    private static func event() -> ProposedEvent { ProposedEvent(type: "test.event", payload: Data("x".utf8)) }

    private static func until(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<300 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test(
        "no session listens while nobody waits; a waiting subscriber that polls once an hour sees another process's commits through LISTEN; listening stops after it"
    )
    func listensWhileWaited() async throws {
        let server = try await PostgresServer.start(name: "listen")
        defer { server.remove() }
        var options = PostgresLogOptions()
        options.pollInterval = .seconds(3_600)
        let reader = try await PostgresEventLog.open(server.url(schema: "listen"), options: options)
        let writer = try await PostgresEventLog.open(server.url(schema: "listen"))
        _ = try await writer.append([Self.event()], to: "a", expectedVersion: .any, claims: [], releases: [])
        _ = try await reader.append([Self.event()], to: "b", expectedVersion: .any, claims: [], releases: [])
        #expect(try await Self.listening(server) == 0)

        let subscriber = Task {
            var positions: [UInt64] = []
            for try await batch in reader.subscribeBatches(after: 0, stream: nil, batchSize: 100) {
                positions += batch.map(\.position)
                if positions.count == 4 { break }
            }
            return positions
        }
        // It catches up (two records), waits, and its log starts listening.
        #expect(try await Self.until { try await Self.listening(server) == 1 })
        _ = try await writer.append([Self.event()], to: "a", expectedVersion: .any, claims: [], releases: [])
        _ = try await writer.append([Self.event()], to: "a", expectedVersion: .any, claims: [], releases: [])
        // Polling would take an hour: the notification must wake it.
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            subscriber.cancel()
        }
        let positions = try await subscriber.value
        deadline.cancel()
        #expect(positions == [1, 2, 3, 4])

        // Nobody waits any more: the listening session unlistens within a few seconds.
        #expect(try await Self.until { try await Self.listening(server) == 0 })
        await reader.close()
        await writer.close()
    }
}
