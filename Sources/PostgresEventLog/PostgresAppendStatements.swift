//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LogRecordFormat
import Logging
import PostgresNIO

/// The statements that append: the locked path (`log_prepare`, then one write, in a transaction)
/// and the one-round-trip path (`log_append`, on its own: the server checks the beliefs the group
/// was decided on and writes only if they all hold).
enum PostgresAppendStatements {
    /// Locks the head, then reads what the appends are checked against (stored event ids, stream
    /// versions, claim owners): one round trip, `log_prepare` (PostgresSchema), whose statements
    /// each see every append committed before the lock was granted. Call it in a transaction.
    static func prepare(
        _ appends: [CheckedAppend], on connection: PostgresConnection, logger: Logger
    ) async throws -> AppendSnapshot {
        let ids = appends.flatMap { $0.events.map(\.eventID) }
        let streams = Array(Set(appends.map(\.streamID)))
        let claims = Array(appends.reduce(into: Set<String>()) { $0.formUnion($1.claims.union($1.releases)) })
        let rows = try await connection.query(
            "SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_prepare(\(ids), \(streams), \(claims))", logger: logger)
        guard let snapshot = try await report(rows) else { throw PostgresLogError.server("the log's head row is missing") }
        return snapshot
    }

    /// Inserts the records, changes the claims, moves the head and announces it: one statement.
    /// Call it in the transaction that called `prepare`.
    static func write(_ decision: GroupDecision, channel: String, on connection: PostgresConnection, logger: Logger) async throws {
        let rows = decision.rows
        let (released, taken, head) = (decision.released, decision.taken, decision.after.head)
        try await connection.query(
            """
            WITH records AS (
                INSERT INTO log_records (position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash)
                SELECT * FROM unnest(\(rows.positions)::bigint[], \(rows.streams)::text[], \(rows.versions)::bigint[], \(rows.timestamps)::bigint[],
                    \(rows.ids)::uuid[], \(rows.types)::text[], \(rows.schemaVersions)::integer[], \(rows.metadata)::bytea[], \(rows.payloads)::bytea[],
                    \(rows.crcs)::integer[], \(rows.hashes)::bytea[])),
            released AS (DELETE FROM log_claims WHERE claim = ANY(\(released)::text[])),
            taken AS (
                INSERT INTO log_claims (claim, stream_id) SELECT * FROM unnest(\(taken.map(\.claim))::text[], \(taken.map(\.owner))::text[])
                ON CONFLICT (claim) DO UPDATE SET stream_id = EXCLUDED.stream_id),
            moved AS (
                UPDATE log_head SET position = \(Int64(head.position)), hash = \(ByteBuffer(bytes: head.hash.bytes)), timestamp_us = \(head.timestamp))
            SELECT pg_notify(\(channel), \(String(head.position)))
            """, logger: logger)
    }

    /// One round trip, outside any transaction: `log_append` locks the head and checks `beliefs`
    /// against what is stored; if every one holds it writes the decision (records, claims, head,
    /// notification) and returns nil, which means committed. If one does not, it writes nothing
    /// and returns what it found for the group, to decide again on.
    static func conditionalAppend(
        _ decision: GroupDecision, beliefs: AppendBeliefs, channel: String, client: PostgresClient, logger: Logger
    ) async throws -> AppendSnapshot? {
        let rows = decision.rows
        let (released, taken, head) = (decision.released, decision.taken, decision.after.head)
        let result = try await client.query(
            """
            SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_append(
                \(beliefs.head), \(ByteBuffer(bytes: beliefs.headHash.bytes)), \(beliefs.streams)::text[], \(beliefs.versions)::bigint[], \(beliefs.ids)::uuid[], \(beliefs.knownIDs),
                \(beliefs.freeClaims)::text[], \(beliefs.ownedClaims)::text[], \(beliefs.owners)::text[],
                \(rows.positions)::bigint[], \(rows.streams)::text[], \(rows.versions)::bigint[], \(rows.timestamps)::bigint[],
                \(rows.ids)::uuid[], \(rows.types)::text[], \(rows.schemaVersions)::integer[], \(rows.metadata)::bytea[], \(rows.payloads)::bytea[],
                \(rows.crcs)::integer[], \(rows.hashes)::bytea[],
                \(released)::text[], \(taken.map(\.claim))::text[], \(taken.map(\.owner))::text[],
                \(ByteBuffer(bytes: head.hash.bytes)), \(head.timestamp), \(channel))
            """, logger: logger)
        return try await report(result)
    }

    /// Reads the rows `log_prepare` and a refusing `log_append` return: kind 0 the head, 1 a
    /// stored event id, 2 a stream version, 3 a claim owner; kind 9 alone means accepted (nil).
    private static func report(_ rows: PostgresRowSequence) async throws -> AppendSnapshot? {
        var head: AppendSnapshot.Head?
        var snapshot = AppendSnapshot(head: AppendSnapshot.Head(position: 0, hash: .genesis, timestamp: 0))
        for try await (kind, position, hash, number, id, name, owner) in rows.decode(
            (Int32, Int64?, ByteBuffer?, Int64?, UUID?, String?, String?).self)
        {
            switch kind {
            case 0:
                guard let position, let hash, let number, hash.readableBytes == 32 else {
                    throw PostgresLogError.server("the log's head row is incomplete or its hash is not 32 bytes")
                }
                head = AppendSnapshot.Head(position: UInt64(position), hash: ChainHash(bytes: Array(buffer: hash)), timestamp: number)
            case 1:
                if let id, let position, let number { snapshot.known[id] = (UInt64(position), UInt64(number)) }
            case 2:
                if let name, let number { snapshot.versions[name] = UInt64(number) }
            case 3:
                if let name, let owner { snapshot.owners[name] = owner }
            default:
                return nil
            }
        }
        guard let head else { throw PostgresLogError.server("the log's head row is missing") }
        snapshot.head = head
        return snapshot
    }
}
