//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import PostgresNIO
import SpeziAccountTesting
import Synchronization

/// The work-equal PostgreSQL peer of the bulk import and of the single durable writer (issue 43):
/// the log's rows, as a careful user would insert them without the log. The table has
/// `log_records`' eleven columns and its three unique indexes (position; stream and version; event
/// id), and each event's CRC-32C and SHA-256 chain hash are computed as the log computes them (the
/// record in the log's layout, FORMAT.md). One `INSERT … SELECT * FROM unnest(…)` per batch, its
/// arrays bound through postgres-nio's own array encoding; one `INSERT … VALUES` with bound values
/// per single row. Not done, as the log does: reading the head, checking expected versions and
/// event ids before the write, claims, the head row and the notification.
final class RawPostgresRecords: Sendable {
    private let raw: RawPostgres
    private let state = Mutex(Head())

    private struct Head {
        var position: UInt64 = 0
        var hash = [UInt8](repeating: 0, count: 32)
        var scratch: [UInt8] = []
    }

    /// A table of the log's columns; `durable`: each commit waits for its WAL flush.
    init(server: PostgresServer, table: String, durable: Bool = false) async throws {
        raw = try await RawPostgres(server: server, table: table, durable: durable, connections: 1, columns: .logRecords)
    }

    /// Inserts one item after the ones inserted before, in a transaction of its own.
    func insert(_ item: WorkEqualImport.Item) async throws {
        let stamp = microsecondsNow()
        let (position, metadata, crc, hash) = state.withLock { head in seal(item, timestamp: stamp, head: &head) }
        let event = item.event
        try await raw.query(
            """
            INSERT INTO events (position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash)
            VALUES (\(Int64(position)), \(item.stream), \(Int64(item.version)), \(stamp), \(event.eventID), \(event.type),
                \(Int32(bitPattern: event.schemaVersion)), \(metadata), \(ByteBuffer(data: event.payload)), \(crc), \(ByteBuffer(bytes: hash)))
            """)
    }

    /// Takes the next position for `item`, writes its record in the log's layout to compute its
    /// CRC-32C and chain hash, and returns the values its row stores.
    private func seal(
        _ item: WorkEqualImport.Item, timestamp: Int64, head: inout Head
    ) -> (position: UInt64, metadata: ByteBuffer, crc: Int32, hash: [UInt8]) {
        head.position += 1
        let pairs = WorkEqualImport.Loop.pairs(item.event.metadata)
        let size = WorkEqualImport.Loop.size(item, pairs: pairs)
        if head.scratch.count < size { head.scratch = [UInt8](repeating: 0, count: max(size, 2 * head.scratch.count)) }
        let position = head.position
        let crc = head.scratch.withUnsafeMutableBytes { buffer in
            WorkEqualImport.Loop.write(
                item, pairs: pairs, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<size]), position: position, timestamp: timestamp,
                hash: &head.hash)
        }
        return (position, Self.metadataSection(pairs), Int32(bitPattern: crc), head.hash)
    }

    /// Inserts the items (the work-equal LMDB loop's, whose record writer this uses) in one
    /// statement, after the ones inserted before.
    func insertBatch(_ items: [WorkEqualImport.Item]) async throws {
        let stamp = microsecondsNow()
        var positions: [Int64] = []
        var streams: [String] = []
        var versions: [Int64] = []
        var times: [Int64] = []
        var ids: [UUID] = []
        var types: [String] = []
        var schemas: [Int32] = []
        var metadata: [ByteBuffer] = []
        var payloads: [ByteBuffer] = []
        var crcs: [Int32] = []
        var hashes: [ByteBuffer] = []
        state.withLock { head in
            for item in items {
                let (position, section, crc, hash) = seal(item, timestamp: stamp, head: &head)
                positions.append(Int64(position))
                streams.append(item.stream)
                versions.append(Int64(item.version))
                times.append(stamp)
                ids.append(item.event.eventID)
                types.append(item.event.type)
                schemas.append(Int32(bitPattern: item.event.schemaVersion))
                metadata.append(section)
                payloads.append(ByteBuffer(data: item.event.payload))
                crcs.append(crc)
                hashes.append(ByteBuffer(bytes: hash))
            }
        }
        try await raw.query(
            """
            INSERT INTO events (position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash)
            SELECT * FROM unnest(\(positions)::bigint[], \(streams)::text[], \(versions)::bigint[], \(times)::bigint[], \(ids)::uuid[],
                \(types)::text[], \(schemas)::integer[], \(metadata)::bytea[], \(payloads)::bytea[], \(crcs)::integer[], \(hashes)::bytea[])
            """)
    }

    /// The metadata column as the log stores it: a u16 count, then each key and value with a u16
    /// length (FORMAT.md).
    private static func metadataSection(_ pairs: [(String, String)]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt16(pairs.count))
        for (key, value) in pairs {
            buffer.writeInteger(UInt16(key.utf8.count))
            buffer.writeString(key)
            buffer.writeInteger(UInt16(value.utf8.count))
            buffer.writeString(value)
        }
        return buffer
    }

    func close() async {
        await raw.close()
    }
}
