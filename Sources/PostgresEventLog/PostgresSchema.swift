//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import PostgresNIO

/// The log's tables, created and migrated by the backend itself (POSTGRES.md documents them).
/// Every statement is fixed text; the schema is chosen per connection through `search_path`, and
/// its name reaches the server only as a bound parameter.
enum PostgresSchema {
    /// The version this build creates and reads.
    static let version = 1

    /// Creates what is missing, in one transaction under an advisory lock (several servers may
    /// start at once), and checks the version. Returns the log's id.
    static func migrate(on connection: PostgresConnection, location: PostgresLogLocation, logger: Logger) async throws -> UUID {
        try await connection.withTransaction(logger: logger) { connection in
            // The schema itself: its name is quoted by the server (format %I), never spliced here.
            try await connection.query(
                """
                CREATE OR REPLACE FUNCTION pg_temp.spezi_create_schema(name text) RETURNS void LANGUAGE plpgsql AS
                $body$ BEGIN EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', name); END $body$
                """, logger: logger)
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(location.schema)))", logger: logger)
            try await connection.query("SELECT pg_temp.spezi_create_schema(\(location.schema))", logger: logger)
            for statement in tables {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                "INSERT INTO log_schema (version, log_id) VALUES (\(version), \(UUID())) ON CONFLICT (id) DO NOTHING", logger: logger)
            try await connection.query(
                "INSERT INTO log_head (position, hash, timestamp_us) VALUES (0, \(ByteBuffer(repeating: 0, count: 32)), 0) ON CONFLICT (id) DO NOTHING",
                logger: logger)
            let rows = try await connection.query("SELECT version, log_id FROM log_schema", logger: logger)
            for try await (found, logID) in rows.decode((Int, UUID).self) {
                guard found <= version else {
                    throw PostgresLogError.newerSchema(found: found, supported: version, location: location.description)
                }
                return logID
            }
            throw PostgresLogError.server("the log at \(location) has no schema row")
        }
    }

    /// The tables and the helper function, each statement fixed text (no value is spliced in).
    static let tables = [
        """
        CREATE TABLE IF NOT EXISTS log_schema (
            id boolean PRIMARY KEY DEFAULT true CHECK (id),
            version integer NOT NULL,
            log_id uuid NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS log_head (
            id boolean PRIMARY KEY DEFAULT true CHECK (id),
            position bigint NOT NULL,
            hash bytea NOT NULL,
            timestamp_us bigint NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS log_records (
            position bigint PRIMARY KEY,
            stream_id text NOT NULL,
            stream_version bigint NOT NULL,
            timestamp_us bigint NOT NULL,
            event_id uuid NOT NULL,
            type text NOT NULL,
            schema_version integer NOT NULL,
            metadata bytea NOT NULL,
            payload bytea NOT NULL,
            crc integer NOT NULL,
            hash bytea NOT NULL,
            CONSTRAINT log_records_stream_version UNIQUE (stream_id, stream_version),
            CONSTRAINT log_records_event_id UNIQUE (event_id))
        """,
        """
        CREATE TABLE IF NOT EXISTS log_claims (
            claim text PRIMARY KEY,
            stream_id text NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS log_metadata (
            name text PRIMARY KEY,
            value bytea NOT NULL)
        """,
        // An append's first step: lock the head, then read what the appends are checked against.
        // Each statement of a PL/pgSQL function takes a new snapshot, so those after the lock see
        // every append committed before it was granted. One round trip instead of four.
        //
        // The functions' statements are planned once per connection (a generic plan), not
        // for each call: planning log_append's checks cost more than running them. Every one of
        // them is a lookup by key, and with sequential scans disabled the plan uses the indexes
        // even when it is made while the tables are empty (it would otherwise scan `log_claims`
        // whole, and keep that plan until the table is next analyzed). JIT compilation is off: a
        // disabled scan's cost is far above its threshold, and compiling took 70 ms a call.
        """
        CREATE OR REPLACE FUNCTION log_prepare(ids uuid[], streams text[], claims text[])
        RETURNS TABLE (o_kind integer, o_pos bigint, o_hash bytea, o_num bigint, o_id uuid, o_name text, o_owner text)
        LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $body$
        BEGIN
            RETURN QUERY SELECT 0, h.position, h.hash, h.timestamp_us, NULL::uuid, NULL::text, NULL::text FROM log_head h FOR UPDATE;
            RETURN QUERY SELECT 1, r.position, NULL::bytea, r.stream_version, r.event_id, NULL::text, NULL::text
                FROM log_records r WHERE r.event_id = ANY(ids);
            RETURN QUERY SELECT 2, NULL::bigint, NULL::bytea, max(r.stream_version), NULL::uuid, r.stream_id, NULL::text
                FROM log_records r WHERE r.stream_id = ANY(streams) GROUP BY r.stream_id;
            RETURN QUERY SELECT 3, NULL::bigint, NULL::bytea, NULL::bigint, NULL::uuid, c.claim, c.stream_id
                FROM log_claims c WHERE c.claim = ANY(claims);
        END
        $body$
        """,
        // An append in one round trip, outside a transaction: the group was decided on what its
        // writer believes (the head's position and hash, each stream's version, how many of its event ids
        // are stored, each claim's owner). Every belief is checked, then the head is moved only if
        // it is still the believed one; if all hold, the records, claims, head and notification are written, else nothing is and the
        // facts are returned (as log_prepare returns them) to decide again on. A group whose
        // appends all fail (or are retries) writes nothing but still checks its beliefs and
        // locks the head (an UPDATE to the same values), so its answers are as sure as a write.
        // The writes of an accepted group, shared by log_append and log_append_bulk: moves the
        // head if it is still where the caller believed (false, and nothing written, if another
        // append moved it), then writes the records and the claims and notifies. Called only from
        // those two, it runs under their settings (a kept generic plan, no sequential scans).
        """
        CREATE OR REPLACE FUNCTION log_write_group(
            p_head bigint, p_head_hash bytea,
            r_pos bigint[], r_stream text[], r_ver bigint[], r_ts bigint[], r_id uuid[], r_type text[], r_schema integer[],
            r_meta bytea[], r_payload bytea[], r_crc integer[], r_hash bytea[],
            p_released text[], p_taken text[], p_taken_owners text[], p_hash bytea, p_timestamp bigint, p_channel text)
        RETURNS boolean
        LANGUAGE plpgsql VOLATILE AS $body$
        DECLARE
            last_pos bigint := coalesce(r_pos[cardinality(r_pos)], p_head);
        BEGIN
            UPDATE log_head SET position = last_pos, hash = p_hash, timestamp_us = p_timestamp
                WHERE position = p_head AND hash = p_head_hash;
            IF NOT FOUND THEN
                RETURN false;
            END IF;
            IF last_pos > p_head THEN
                INSERT INTO log_records (position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash)
                    SELECT * FROM unnest(r_pos, r_stream, r_ver, r_ts, r_id, r_type, r_schema, r_meta, r_payload, r_crc, r_hash);
                IF cardinality(p_released) > 0 THEN
                    DELETE FROM log_claims c WHERE c.claim = ANY(p_released);
                END IF;
                IF cardinality(p_taken) > 0 THEN
                    INSERT INTO log_claims (claim, stream_id) SELECT * FROM unnest(p_taken, p_taken_owners)
                        ON CONFLICT (claim) DO UPDATE SET stream_id = EXCLUDED.stream_id;
                END IF;
                PERFORM pg_notify(p_channel, last_pos::text);
            END IF;
            RETURN true;
        END
        $body$
        """,
        """
        CREATE OR REPLACE FUNCTION log_append(
            p_head bigint, p_head_hash bytea, p_streams text[], p_versions bigint[], p_ids uuid[], p_known bigint,
            p_free text[], p_owned text[], p_owners text[],
            r_pos bigint[], r_stream text[], r_ver bigint[], r_ts bigint[], r_id uuid[], r_type text[], r_schema integer[],
            r_meta bytea[], r_payload bytea[], r_crc integer[], r_hash bytea[],
            p_released text[], p_taken text[], p_taken_owners text[], p_hash bytea, p_timestamp bigint, p_channel text)
        RETURNS TABLE (o_kind integer, o_pos bigint, o_hash bytea, o_num bigint, o_id uuid, o_name text, o_owner text)
        LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $body$
        DECLARE
            holds boolean;
        BEGIN
            -- The checks run before the head is locked: every append moves the head, so one that
            -- commits after them makes the conditional UPDATE below match no row (it waits for
            -- that append's lock, then re-reads the head), and nothing is written.
            holds := NOT EXISTS (SELECT 1 FROM unnest(p_streams, p_versions) AS b(s, v)
                    WHERE b.v <> coalesce((SELECT max(r.stream_version) FROM log_records r WHERE r.stream_id = b.s), 0))
                AND (SELECT count(*) FROM log_records r WHERE r.event_id = ANY(p_ids)) = p_known
                AND NOT EXISTS (SELECT 1 FROM log_claims c WHERE c.claim = ANY(p_free))
                AND (SELECT count(*) FROM log_claims c JOIN unnest(p_owned, p_owners) AS b(name, owner)
                    ON c.claim = b.name AND c.stream_id = b.owner) = cardinality(p_owned);
            IF holds THEN
                IF log_write_group(p_head, p_head_hash, r_pos, r_stream, r_ver, r_ts, r_id, r_type, r_schema, r_meta, r_payload,
                    r_crc, r_hash, p_released, p_taken, p_taken_owners, p_hash, p_timestamp, p_channel) THEN
                    RETURN QUERY SELECT 9, NULL::bigint, NULL::bytea, NULL::bigint, NULL::uuid, NULL::text, NULL::text;
                    RETURN;
                END IF;
            END IF;
            RETURN QUERY SELECT * FROM log_prepare(p_ids, p_streams, p_free || p_owned);
        END
        $body$
        """,
        // log_append for the most common group, one record and no claims, with scalar
        // parameters: the same checks and writes, without building and unpacking eleven arrays
        // (a third less server time per call in pgbench). The head moves to the record.
        """
        CREATE OR REPLACE FUNCTION log_append_one(
            p_head bigint, p_head_hash bytea, p_stream text, p_version bigint,
            r_pos bigint, r_ver bigint, r_ts bigint, r_id uuid, r_type text, r_schema integer, r_meta bytea, r_payload bytea,
            r_crc integer, r_hash bytea, p_channel text)
        RETURNS TABLE (o_kind integer, o_pos bigint, o_hash bytea, o_num bigint, o_id uuid, o_name text, o_owner text)
        LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $body$
        BEGIN
            IF p_version = coalesce((SELECT max(r.stream_version) FROM log_records r WHERE r.stream_id = p_stream), 0)
                AND NOT EXISTS (SELECT 1 FROM log_records r WHERE r.event_id = r_id) THEN
                UPDATE log_head SET position = r_pos, hash = r_hash, timestamp_us = r_ts
                    WHERE position = p_head AND hash = p_head_hash;
                IF FOUND THEN
                    INSERT INTO log_records (position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash)
                        VALUES (r_pos, p_stream, r_ver, r_ts, r_id, r_type, r_schema, r_meta, r_payload, r_crc, r_hash);
                    PERFORM pg_notify(p_channel, r_pos::text);
                    o_kind := 9;
                    RETURN NEXT;
                    RETURN;
                END IF;
            END IF;
            RETURN QUERY SELECT * FROM log_prepare(ARRAY[r_id], ARRAY[p_stream], ARRAY[]::text[]);
        END
        $body$
        """,
        // log_append for a large group (a bulk import's batch): the same parameters, plus the
        // subset of the beliefs the server checks by lookups (c_streams, c_versions, c_ids). The
        // rest are checked by the inserts themselves: a written stream's first record is
        // (stream, believed version + 1), which the unique index on (stream_id, stream_version)
        // refuses if the stream has grown since (its versions are gap-free from 1), and a written
        // event id is refused by the unique index on event_id if it is stored. Such a refusal
        // rolls back what the group wrote (a subtransaction) and returns the facts, as a refused
        // belief does: the same answers, without looking up every record of the group twice.
        """
        CREATE OR REPLACE FUNCTION log_append_bulk(
            p_head bigint, p_head_hash bytea, p_streams text[], p_versions bigint[], p_ids uuid[], p_known bigint,
            p_free text[], p_owned text[], p_owners text[],
            r_pos bigint[], r_stream text[], r_ver bigint[], r_ts bigint[], r_id uuid[], r_type text[], r_schema integer[],
            r_meta bytea[], r_payload bytea[], r_crc integer[], r_hash bytea[],
            p_released text[], p_taken text[], p_taken_owners text[], p_hash bytea, p_timestamp bigint, p_channel text,
            c_streams text[], c_versions bigint[], c_ids uuid[])
        RETURNS TABLE (o_kind integer, o_pos bigint, o_hash bytea, o_num bigint, o_id uuid, o_name text, o_owner text)
        LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $body$
        DECLARE
            holds boolean;
        BEGIN
            holds := NOT EXISTS (SELECT 1 FROM unnest(c_streams, c_versions) AS b(s, v)
                    WHERE b.v <> coalesce((SELECT max(r.stream_version) FROM log_records r WHERE r.stream_id = b.s), 0))
                AND (SELECT count(*) FROM log_records r WHERE r.event_id = ANY(c_ids)) = p_known
                AND NOT EXISTS (SELECT 1 FROM log_claims c WHERE c.claim = ANY(p_free))
                AND (SELECT count(*) FROM log_claims c JOIN unnest(p_owned, p_owners) AS b(name, owner)
                    ON c.claim = b.name AND c.stream_id = b.owner) = cardinality(p_owned);
            IF holds THEN
                BEGIN
                    IF log_write_group(p_head, p_head_hash, r_pos, r_stream, r_ver, r_ts, r_id, r_type, r_schema, r_meta, r_payload,
                        r_crc, r_hash, p_released, p_taken, p_taken_owners, p_hash, p_timestamp, p_channel) THEN
                        RETURN QUERY SELECT 9, NULL::bigint, NULL::bytea, NULL::bigint, NULL::uuid, NULL::text, NULL::text;
                        RETURN;
                    END IF;
                EXCEPTION WHEN unique_violation THEN
                    -- A stream grew or an event id is stored: nothing of the group stays.
                    NULL;
                END;
            END IF;
            RETURN QUERY SELECT * FROM log_prepare(p_ids, p_streams, p_free || p_owned);
        END
        $body$
        """,
        // The bytes the chain hash covers (FORMAT.md, bytes 36 to the end), rebuilt from the
        // columns: `sha256(previous hash || log_record_body(r)) = r.hash` re-checks a record in psql.
        """
        CREATE OR REPLACE FUNCTION log_record_body(r log_records) RETURNS bytea LANGUAGE sql IMMUTABLE AS $body$
            SELECT '\\x0100'::bytea || int8send(r.position) || int8send(r.stream_version) || int8send(r.timestamp_us)
                || uuid_send(r.event_id) || int4send(r.schema_version)
                || substring(int4send(octet_length(convert_to(r.stream_id, 'UTF8'))) from 3) || convert_to(r.stream_id, 'UTF8')
                || substring(int4send(octet_length(convert_to(r.type, 'UTF8'))) from 3) || convert_to(r.type, 'UTF8')
                || r.metadata || int4send(octet_length(r.payload)) || r.payload
        $body$
        """
    ]
}
