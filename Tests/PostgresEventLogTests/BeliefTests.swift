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

/// A PostgreSQL append is decided on what its process believes the log holds, and the server
/// writes it only if that belief still holds. These tests make the beliefs wrong on purpose.
@Suite("One-round-trip appends on PostgreSQL: stale beliefs are refused and corrected", .integration)
struct BeliefTests {
    private static func event(_ type: String = "test.event") -> ProposedEvent {
        ProposedEvent(type: type, payload: Data("x".utf8))
    }

    @Test("a lone writer's appends after the first take one round trip each")
    func loneWriter() async throws {
        let server = try await PostgresServer.start(name: "belief-lone")
        defer { server.remove() }
        // Count calls of the log's functions (new sessions read the setting).
        _ = try await server.psql("ALTER DATABASE postgres SET track_functions = 'pl'")
        let log = try await PostgresEventLog.open(server.url(schema: "lone"))
        for index in 0..<30 {
            _ = try await log.append([Self.event()], to: "stream-\(index % 5)", expectedVersion: .any, claims: [], releases: [])
        }
        // Two events in one append, then one that takes a claim: the general function.
        _ = try await log.append([Self.event(), Self.event()], to: "stream-0", expectedVersion: .any, claims: [], releases: [])
        _ = try await log.append([Self.event()], to: "stream-1", expectedVersion: .any, claims: ["user:one"], releases: [])
        // The first group has no belief to go on and locks the head; the others go on belief.
        #expect(log.appendPaths == AppendPaths(believed: 31, corrected: 0, locked: 1))
        #expect(try await log.streamVersion("stream-4") == 6)
        #expect(try await log.streamVersion("stream-0") == 8)
        #expect(try await log.verify(progress: nil).isIntact)
        await log.close()

        // The single-record appends on belief took log_append_one, the other two log_append. A
        // server process reports its counts when its connection ends: wait until they are in.
        let query = "SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = 'lone' ORDER BY funcname"
        var calls: [String: Int] = [:]
        for _ in 0..<200 {
            let printed = try await server.psql(query)
            calls = Dictionary(
                uniqueKeysWithValues: printed.split(separator: "\n").map { line in
                    let fields = line.split(separator: "|")
                    return (String(fields[0]), Int(fields.last ?? "") ?? -1)
                })
            if calls["log_append_one"] == 29, calls["log_append"] == 2 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(calls["log_append_one"] == 29, "\(calls)")
        #expect(calls["log_append"] == 2, "\(calls)")
    }

    @Test("two nodes take turns on the same streams and claims: every expected version, claim and retry is decided on what is stored")
    func twoNodes() async throws {
        let server = try await PostgresServer.start(name: "belief-nodes")
        defer { server.remove() }
        let url = server.url(schema: "nodes")
        let first = try await PostgresEventLog.open(url)
        let second = try await PostgresEventLog.open(url)

        // Both nodes learn the stream at version 1.
        _ = try await first.append([Self.event()], to: "account-a", expectedVersion: .noStream, claims: ["user:alice"], releases: [])
        #expect(try await second.append([Self.event()], to: "account-a", expectedVersion: .exact(1), claims: [], releases: []).streamVersion == 2)
        // The first node still believes version 1: the server refuses that belief, and the append
        // that expects version 2 succeeds rather than failing on a stale version.
        let third = try await first.append([Self.event()], to: "account-a", expectedVersion: .exact(2), claims: [], releases: [])
        #expect(third.positions == 3...3)
        #expect(third.streamVersion == 3)
        // The second node believes version 2: an append expecting 2 is refused for what is stored (3).
        await #expect {
            try await second.append([Self.event()], to: "account-a", expectedVersion: .exact(2), claims: [], releases: [])
        } throws: { error in
            guard case let EventLogError.wrongExpectedVersion(stream, _, actual) = error else { return false }
            return stream == "account-a" && actual == 3
        }

        // A claim released on one node is free on the other, though that node believed it taken.
        _ = try await second.append([Self.event()], to: "account-b", expectedVersion: .noStream, claims: [], releases: [])
        await #expect {
            try await second.append([Self.event()], to: "account-b", expectedVersion: .any, claims: ["user:alice"], releases: [])
        } throws: { error in
            guard case let EventLogError.claimTaken(claim, owner) = error else { return false }
            return claim == "user:alice" && owner == "account-a"
        }
        _ = try await first.append([Self.event()], to: "account-a", expectedVersion: .any, claims: [], releases: ["user:alice"])
        _ = try await second.append([Self.event()], to: "account-b", expectedVersion: .any, claims: ["user:alice"], releases: [])
        #expect(try await first.claimOwner("user:alice") == "account-b")
        // And the first node, which believes the claim free (it released it), is refused.
        await #expect {
            try await first.append([Self.event()], to: "account-c", expectedVersion: .any, claims: ["user:alice"], releases: [])
        } throws: { error in
            guard case let EventLogError.claimTaken(_, owner) = error else { return false }
            return owner == "account-b"
        }

        // A retry on the other node of an append the first node committed answers with the
        // original positions, though the retrying node never saw that event id.
        let retried = Self.event("test.retried")
        let original = try await first.append([retried], to: "account-d", expectedVersion: .noStream, claims: [], releases: [])
        let again = try await second.append([retried], to: "account-d", expectedVersion: .noStream, claims: [], releases: [])
        #expect(again.wasDuplicate)
        #expect(again.positions == original.positions)

        let paths = [first.appendPaths, second.appendPaths]
        #expect(paths.map(\.corrected).reduce(0, +) >= 4, "\(paths)")
        #expect(try await first.lastPosition() == 7)
        let records = try await first.read(from: 1, direction: .forward, limit: 100)
        #expect(records.map(\.position) == Array(1...7))
        #expect(records.map(\.streamID) == ["account-a", "account-a", "account-a", "account-b", "account-a", "account-b", "account-d"])
        #expect(try await second.verify(progress: nil).isIntact)
        await first.close()
        await second.close()
    }
}
