//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Logging
import PostgresNIO

/// Whole-schema operations for imports: a log is built in a schema of its own and renamed into
/// place in one transaction once every record checked out, so a failed import leaves the target
/// as it was.
extension PostgresEventLog {
    /// How many records the log at `location` holds; nil when its schema or tables do not exist.
    package static func recordCount(at location: PostgresLogLocation, timeout: Duration = .seconds(15)) async throws -> Int64? {
        try await withAdministration(location, timeout: timeout, doing: "count the records of the log at \(location)") { connection, logger in
            let tables = try await connection.query(
                "SELECT count(*)::bigint FROM pg_tables WHERE schemaname = \(location.schema) AND tablename = 'log_records'", logger: logger)
            var exists = false
            for try await count in tables.decode(Int64.self) { exists = count > 0 }
            guard exists else { return nil }
            // The table name is fixed text; the schema is the connection's search_path.
            let rows = try await connection.query("SELECT count(*)::bigint FROM log_records", logger: logger)
            for try await count in rows.decode(Int64.self) { return count }
            return 0
        }
    }

    /// Replaces the schema of `target` (absent, or a log without records) by the schema of
    /// `staging`, in one transaction; refuses when the target holds records by then.
    package static func promote(_ staging: PostgresLogLocation, to target: PostgresLogLocation, timeout: Duration = .seconds(30)) async throws {
        try await withAdministration(target, timeout: timeout, doing: "move the imported log into \(target)") { connection, logger in
            try await connection.withTransaction(logger: logger) { connection in
                // Serialized with schema creation (`PostgresSchema.migrate` takes the same lock).
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(target.schema)))", logger: logger)
                try await connection.query(
                    """
                    CREATE OR REPLACE FUNCTION pg_temp.spezi_promote(staging text, target text) RETURNS void LANGUAGE plpgsql AS
                    $body$
                    DECLARE held bigint;
                    BEGIN
                        IF EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = target AND tablename = 'log_records') THEN
                            EXECUTE format('SELECT count(*) FROM %I.log_records', target) INTO held;
                            IF held > 0 THEN
                                RAISE EXCEPTION 'the log at schema % holds % records: an import needs an empty log', target, held;
                            END IF;
                        END IF;
                        EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', target);
                        EXECUTE format('ALTER SCHEMA %I RENAME TO %I', staging, target);
                    END
                    $body$
                    """, logger: logger)
                try await connection.query("SELECT pg_temp.spezi_promote(\(staging.schema), \(target.schema))", logger: logger)
            }
        }
    }

    /// Drops the schema of `location` with everything in it (an import's staging schema).
    package static func dropSchema(_ location: PostgresLogLocation, timeout: Duration = .seconds(30)) async throws {
        try await withAdministration(location, timeout: timeout, doing: "drop the schema of \(location)") { connection, logger in
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query(
                    """
                    CREATE OR REPLACE FUNCTION pg_temp.spezi_drop_schema(name text) RETURNS void LANGUAGE plpgsql AS
                    $body$ BEGIN EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', name); END $body$
                    """, logger: logger)
                try await connection.query("SELECT pg_temp.spezi_drop_schema(\(location.schema))", logger: logger)
            }
        }
    }

    /// Runs `body` with a client of its own for `location`, closed afterwards.
    private static func withAdministration<T: Sendable>(
        _ location: PostgresLogLocation, timeout: Duration, doing what: String,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        var options = PostgresLogOptions()
        options.maximumConnections = 1
        options.operationTimeout = timeout
        var poolLogger = Logger(label: "PostgresEventLog.pool")
        poolLogger.logLevel = .warning
        let client = PostgresClient(configuration: configuration(location, options: options), backgroundLogger: poolLogger)
        let runner = Task.immediate { await client.run() }
        defer { runner.cancel() }
        let logger = Logger(label: "PostgresEventLog")
        do {
            return try await withDeadline(timeout, doing: what, on: client) { try await body($0, logger) }
        } catch {
            throw PostgresFailure.wrap(error, doing: what)
        }
    }
}
