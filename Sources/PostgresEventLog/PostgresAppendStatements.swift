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
    /// A row of `log_prepare` or `log_append`: kind, position, hash, number, event id, name, owner.
    typealias ReportRow = (Int32, Int64?, ByteBuffer?, Int64?, UUID?, String?, String?)

    /// Locks the head, then reads what the appends are checked against (stored event ids, stream
    /// versions, claim owners): one round trip, `log_prepare` (PostgresSchema), whose statements
    /// each see every append committed before the lock was granted. Call it in a transaction.
    static func prepare(
        _ keys: GroupKeys, on connection: PostgresConnection, logger: Logger
    ) async throws -> AppendSnapshot {
        let rows = try await connection.query(
            "SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_prepare(\(keys.ids), \(keys.streams), \(keys.claims))",
            logger: logger)
        guard let snapshot = try await report(rows.decode(ReportRow.self)) else { throw PostgresLogError.server("the log's head row is missing") }
        return snapshot
    }

    /// Inserts the records, changes the claims, moves the head and announces it: one statement.
    /// Call it in the transaction that called `prepare`.
    static func write(_ decision: GroupDecision, channel: String, on connection: PostgresConnection, logger: Logger) async throws {
        let rows = decision.rows.columns
        let (released, taken, head) = (decision.released, decision.taken, decision.head)
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
        _ decision: GroupDecision, beliefs: AppendBeliefs, channel: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> AppendSnapshot? {
        // A prepared statement: each connection parses and plans it once.
        if let one = LogAppendOneStatement(decision: decision, beliefs: beliefs, channel: channel) {
            return try await report(connection.execute(one, logger: logger))
        }
        if decision.rows.positions.count >= bulkRows {
            return try await report(
                connection.execute(LogAppendBulkStatement(decision: decision, beliefs: beliefs, channel: channel), logger: logger))
        }
        let rows = try await connection.execute(LogAppendStatement(decision: decision, beliefs: beliefs, channel: channel), logger: logger)
        return try await report(rows)
    }

    /// The fewest records a group writes for `log_append_bulk`, which leaves the checks its
    /// inserts make to the unique indexes (a subtransaction per call, worth it only for many rows).
    static let bulkRows = 100

    /// Reads the rows `log_prepare` and a refusing `log_append` return: kind 0 the head, 1 a
    /// stored event id, 2 a stream version, 3 a claim owner; kind 9 alone means accepted (nil).
    private static func report(_ rows: some AsyncSequence<ReportRow, any Error>) async throws -> AppendSnapshot? {
        var head: AppendSnapshot.Head?
        var snapshot = AppendSnapshot(head: AppendSnapshot.Head(position: 0, hash: .genesis, timestamp: 0))
        for try await (kind, position, hash, number, id, name, owner) in rows {
            switch kind {
            case 0:
                guard let position, let hash, let number, hash.readableBytes == 32 else {
                    throw PostgresLogError.server("the log's head row is incomplete or its hash is not 32 bytes")
                }
                head = AppendSnapshot.Head(position: UInt64(position), hash: hash.withUnsafeReadableBytes { ChainHash($0) }, timestamp: number)
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

/// `log_append` as a prepared statement (PostgresSchema documents its parameters).
private struct LogAppendStatement: PostgresPreparedStatement {
    typealias Row = PostgresAppendStatements.ReportRow

    /// The statement's name on each connection (the protocol's default reflects the type's name
    /// on every call).
    static let name = "spezi_log_append"

    static let sql = """
        SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_append(
            $1, $2, $3::text[], $4::bigint[], $5::uuid[], $6, $7::text[], $8::text[], $9::text[],
            $10::bigint[], $11::text[], $12::bigint[], $13::bigint[], $14::uuid[], $15::text[], $16::integer[], $17::bytea[], $18::bytea[],
            $19::integer[], $20::bytea[], $21::text[], $22::text[], $23::text[], $24, $25, $26)
        """

    let decision: GroupDecision
    let beliefs: AppendBeliefs
    let channel: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 26)
        Self.bind(decision, beliefs: beliefs, channel: channel, to: &bindings)
        return bindings
    }

    /// Binds the 26 parameters `log_append` and `log_append_bulk` share.
    static func bind(_ decision: GroupDecision, beliefs: AppendBeliefs, channel: String, to bindings: inout PostgresBindings) {
        let (rows, released, taken, head) = (decision.rows.columns, decision.released, decision.taken, decision.head)
        bindings.append(beliefs.head)
        bindings.append(ByteBuffer(bytes: beliefs.headHash.bytes))
        bindings.append(EncodedColumn(beliefs.streams))
        bindings.append(EncodedColumn(beliefs.versions))
        bindings.append(EncodedColumn(beliefs.ids))
        bindings.append(beliefs.knownIDs)
        bindings.append(beliefs.freeClaims)
        bindings.append(beliefs.ownedClaims)
        bindings.append(beliefs.owners)
        bindings.append(rows.positions)
        bindings.append(rows.streams)
        bindings.append(rows.versions)
        bindings.append(rows.timestamps)
        bindings.append(rows.ids)
        bindings.append(rows.types)
        bindings.append(rows.schemaVersions)
        bindings.append(rows.metadata)
        bindings.append(rows.payloads)
        bindings.append(rows.crcs)
        bindings.append(rows.hashes)
        bindings.append(released)
        bindings.append(taken.map(\.claim))
        bindings.append(taken.map(\.owner))
        bindings.append(ByteBuffer(bytes: head.hash.bytes))
        bindings.append(head.timestamp)
        bindings.append(channel)
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// `log_append_one` as a prepared statement: a group that writes one record and changes no claim,
/// the shape of nearly every single append.
private struct LogAppendOneStatement: PostgresPreparedStatement {
    typealias Row = PostgresAppendStatements.ReportRow

    static let name = "spezi_log_append_one"

    static let sql = """
        SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_append_one(
            $1, $2, $3, $4, $5, $6, $7, $8::uuid, $9, $10::integer, $11::bytea, $12::bytea, $13::integer, $14::bytea, $15)
        """

    let decision: GroupDecision
    let beliefs: AppendBeliefs
    let channel: String
    private let first: (timestamp: Int64, type: String, schemaVersion: Int32, crc: Int32)

    /// Nil unless the group has that shape: one record, written, on the one stream and with the
    /// one event id it believes about (believed absent), no claim taken, released or believed.
    init?(decision: GroupDecision, beliefs: AppendBeliefs, channel: String) {
        let rows = decision.rows
        guard rows.positions.count == 1, let first = rows.first, decision.writes, decision.released.isEmpty, decision.taken.isEmpty,
            beliefs.freeClaims.isEmpty, beliefs.ownedClaims.isEmpty, beliefs.knownIDs == 0,
            beliefs.streams == rows.streams, beliefs.ids == rows.ids, UInt64(rows.positions[0]) == decision.head.position
        else { return nil }
        (self.decision, self.beliefs, self.channel, self.first) = (decision, beliefs, channel, first)
    }

    func makeBindings() throws -> PostgresBindings {
        let rows = decision.rows
        let columns = rows.columns
        var bindings = PostgresBindings(capacity: 15)
        bindings.append(beliefs.head)
        bindings.append(ByteBuffer(bytes: beliefs.headHash.bytes))
        bindings.append(rows.streams[0])
        bindings.append(beliefs.versions[0])
        bindings.append(rows.positions[0])
        bindings.append(rows.versions[0])
        bindings.append(first.timestamp)
        bindings.append(rows.ids[0])
        bindings.append(first.type)
        bindings.append(first.schemaVersion)
        bindings.append(columns.metadata.first)
        bindings.append(columns.payloads.first)
        bindings.append(first.crc)
        bindings.append(columns.hashes.first)
        bindings.append(channel)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// `log_append_bulk` as a prepared statement: `log_append`'s parameters, then the beliefs the
/// server checks by lookups. A written stream's belief and a written event id are left to the
/// unique indexes (PostgresSchema explains why that is the same check).
private struct LogAppendBulkStatement: PostgresPreparedStatement {
    typealias Row = PostgresAppendStatements.ReportRow

    static let name = "spezi_log_append_bulk"

    static let sql = """
        SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_append_bulk(
            $1, $2, $3::text[], $4::bigint[], $5::uuid[], $6, $7::text[], $8::text[], $9::text[],
            $10::bigint[], $11::text[], $12::bigint[], $13::bigint[], $14::uuid[], $15::text[], $16::integer[], $17::bytea[], $18::bytea[],
            $19::integer[], $20::bytea[], $21::text[], $22::text[], $23::text[], $24, $25, $26, $27::text[], $28::bigint[], $29::uuid[])
        """

    let decision: GroupDecision
    let beliefs: AppendBeliefs
    let channel: String

    func makeBindings() throws -> PostgresBindings {
        let rows = decision.rows
        // A stream whose first record in the group is (stream, believed version + 1): the insert
        // checks its belief. Every other stream, and every event id not written, is looked up.
        var firstWritten: [String: Int64] = [:]
        for (stream, version) in zip(rows.streams, rows.versions) where firstWritten[stream] == nil { firstWritten[stream] = version }
        var streams: [String] = []
        var versions: [Int64] = []
        for (stream, version) in zip(beliefs.streams, beliefs.versions) where firstWritten[stream] != version + 1 {
            streams.append(stream)
            versions.append(version)
        }
        let written = Set(rows.ids)
        var bindings = PostgresBindings(capacity: 29)
        LogAppendStatement.bind(decision, beliefs: beliefs, channel: channel, to: &bindings)
        bindings.append(EncodedColumn(streams))
        bindings.append(EncodedColumn(versions))
        bindings.append(EncodedColumn(beliefs.ids.filter { !written.contains($0) }))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
