//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Logging
import PostgresNIO
import SpeziAccountTesting

/// The raw PostgreSQL baseline: the same events as plain rows of one table with a bigserial
/// position (stream, type, time, payload), through postgres-nio's `PostgresClient` with bound
/// parameters. No chain, no checksum, no claims, no expected version, no event-id index: what a
/// careful user would write for "append a row", and the storage's limit for this client.
final class RawPostgres: Sendable {
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger

    /// A row read back.
    struct Row {
        let position: Int64
        let stream: String
        let type: String
        let payload: [UInt8]
        let timestampMicros: Int64

        var date: Date { Date(timeIntervalSince1970: Double(timestampMicros) / 1_000_000) }
    }

    /// The columns of the table.
    enum Columns {
        /// Position (bigserial), stream, type, time, payload: the plain baseline.
        case plain
        /// `log_records`' eleven columns and three unique indexes (the bulk import's work-equal peer).
        case logRecords
    }

    /// Connects to `server` with up to `connections` connections and creates `table`.
    init(server: PostgresServer, table: String, durable: Bool, connections: Int, columns: Columns = .plain) async throws {
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: server.port, username: "postgres", password: nil, database: "postgres", tls: .disable)
        configuration.options.maximumConnections = connections
        configuration.options.additionalStartupParameters = [("synchronous_commit", durable ? "on" : "off"), ("search_path", "raw_" + table)]
        var logger = Logger(label: "peer-compare.postgres")
        logger.logLevel = .warning
        self.logger = logger
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let client = client
        runner = Task.immediate { await client.run() }
        // Fixed names of this benchmark's own (no user input reaches the SQL).
        try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS raw_\(table)"), logger: logger)
        let definition =
            switch columns {
            case .plain:
                """
                position bigserial PRIMARY KEY, stream text NOT NULL, type text NOT NULL,
                timestamp_us bigint NOT NULL, payload bytea NOT NULL
                """
            case .logRecords:
                """
                position bigint PRIMARY KEY, stream_id text NOT NULL, stream_version bigint NOT NULL, timestamp_us bigint NOT NULL,
                event_id uuid NOT NULL, type text NOT NULL, schema_version integer NOT NULL, metadata bytea NOT NULL,
                payload bytea NOT NULL, crc integer NOT NULL, hash bytea NOT NULL,
                UNIQUE (stream_id, stream_version), UNIQUE (event_id)
                """
            }
        try await client.query(PostgresQuery(unsafeSQL: "CREATE TABLE IF NOT EXISTS raw_\(table).events (\(definition))"), logger: logger)
    }

    /// Runs one statement.
    func query(_ query: PostgresQuery) async throws {
        try await client.query(query, logger: logger)
    }

    /// One INSERT in its own transaction (a commit per event).
    func insert(_ event: ProposedEvent, stream: String) async throws {
        try await client.query(
            "INSERT INTO events (stream, type, timestamp_us, payload) VALUES (\(stream), \(event.type), \(microsecondsNow()), \(ByteBuffer(bytes: event.payload)))",
            logger: logger)
    }

    /// Many rows with one INSERT (one transaction).
    func insertBatch(_ rows: [(stream: String, event: ProposedEvent)]) async throws {
        let stamp = microsecondsNow()
        let streams = rows.map(\.stream)
        let types = rows.map(\.event.type)
        let times = rows.map { _ in stamp }
        let payloads = rows.map { ByteBuffer(bytes: $0.event.payload) }
        try await client.query(
            """
            INSERT INTO events (stream, type, timestamp_us, payload)
            SELECT * FROM unnest(\(streams)::text[], \(types)::text[], \(times)::bigint[], \(payloads)::bytea[])
            """, logger: logger)
    }

    /// Up to `limit` rows after `position`, in position order.
    func read(after position: Int64, limit: Int) async throws -> [Row] {
        let rows = try await client.query(
            "SELECT position, stream, type, timestamp_us, payload FROM events WHERE position > \(position) ORDER BY position LIMIT \(Int64(limit))",
            logger: logger)
        var result: [Row] = []
        result.reserveCapacity(limit)
        for try await (position, stream, type, time, payload) in rows.decode((Int64, String, String, Int64, ByteBuffer).self) {
            result.append(Row(position: position, stream: stream, type: type, payload: Array(payload.readableBytesView), timestampMicros: time))
        }
        return result
    }

    func close() async {
        runner.cancel()
        await runner.value
    }
}
