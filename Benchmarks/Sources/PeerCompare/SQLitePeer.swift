//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import GRDB

/// The same event store on SQLite, through GRDB, built the way a competent user would: one
/// `events` table with a global autoincrement position, a unique (stream, version) index and a
/// unique event id; WAL mode; cached prepared statements; one transaction per append that reads
/// the stream's version, checks it and inserts. SQLite has one writer at a time and no group
/// commit, so concurrent appenders queue on GRDB's writer and each pays its own commit.
final class SQLitePeer: Sendable {
    let pool: DatabasePool

    struct WrongExpectedVersion: Error, CustomStringConvertible {
        let stream: String
        let expected: ExpectedVersion
        let actual: Int64
        var description: String { "stream \(stream) is at version \(actual), expected \(expected)" }
    }

    /// Opens (creating) `events.sqlite` in `directory`; durable runs use `synchronous=FULL` (an
    /// fsync of the WAL at every commit), relaxed runs `synchronous=OFF`.
    init(directory: URL, durable: Bool) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A pool puts the database in WAL mode (and then sets synchronous=NORMAL on its writer).
        pool = try DatabasePool(path: directory.appendingPathComponent("events.sqlite").path)
        let mode = durable ? 2 : 0 // FULL : OFF
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(mode)")
            let journal = try String.fetchOne(db, sql: "PRAGMA journal_mode")
            let synchronous = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            precondition(journal == "wal" && synchronous == mode, "SQLite is not set up as intended")
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS events (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    stream TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    event_id BLOB NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    timestamp INTEGER NOT NULL,
                    metadata BLOB NOT NULL,
                    payload BLOB NOT NULL
                );
                CREATE UNIQUE INDEX IF NOT EXISTS events_stream_version ON events(stream, version);
                """)
        }
    }

    /// Appends `events` to `stream` in one transaction; returns the last position and the
    /// stream's new version.
    @discardableResult
    func append(_ events: [ProposedEvent], to stream: String, expectedVersion: ExpectedVersion = .any) async throws -> (position: Int64, version: Int64) {
        try await pool.write { db in
            try Self.append(db, events, to: stream, expectedVersion: expectedVersion)
        }
    }

    private static func append(_ db: Database, _ events: [ProposedEvent], to stream: String, expectedVersion: ExpectedVersion) throws -> (position: Int64, version: Int64) {
        let current = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(version) FROM events WHERE stream = ?"), arguments: [stream]) ?? 0
        switch expectedVersion {
        case .any: break
        case .noStream: guard current == 0 else { throw WrongExpectedVersion(stream: stream, expected: expectedVersion, actual: current) }
        case let .exact(version): guard current == Int64(version) else { throw WrongExpectedVersion(stream: stream, expected: expectedVersion, actual: current) }
        }
        let insert = try db.cachedStatement(sql: """
            INSERT INTO events (stream, version, event_id, type, timestamp, metadata, payload) VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        let timestamp = Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
        var version = current
        for event in events {
            version += 1
            try insert.execute(arguments: [stream, version, event.eventID, event.type, timestamp, encodeMetadata(event.metadata), event.payload])
        }
        return (db.lastInsertedRowID, version)
    }

    static let selectAll = "SELECT position, stream, version, event_id, type, timestamp, metadata, payload FROM events ORDER BY position"

    /// Reads every event in position order, decoded into `SQLiteEvent`s (payload copied).
    func scan() async throws -> (records: Int, payloadBytes: Int) {
        try await pool.read { db in
            let events = try SQLiteEvent.fetchCursor(db.cachedStatement(sql: Self.selectAll))
            var records = 0
            var payloadBytes = 0
            var checksum: Int64 = 0
            while let event = try events.next() {
                records += 1
                payloadBytes &+= event.payload.count
                checksum &+= event.position &+ event.version &+ Int64(event.stream.utf8.count &+ event.type.utf8.count)
            }
            precondition(checksum != 0 || records == 0)
            return (records, payloadBytes)
        }
    }

    /// Reads every row in position order without building a struct or copying the payload (the
    /// counterpart of the log's in-place `RecordView` scan).
    func scanInPlace() async throws -> (records: Int, payloadBytes: Int) {
        try await pool.read { db in
            let rows = try GRDB.Row.fetchCursor(db.cachedStatement(sql: "SELECT position, version, payload FROM events ORDER BY position"))
            var records = 0
            var payloadBytes = 0
            var checksum: Int64 = 0
            while let row = try rows.next() {
                records += 1
                checksum &+= (row[0] as Int64) &+ (row[1] as Int64)
                payloadBytes &+= try row.withUnsafeData(atIndex: 2) { $0?.count ?? 0 }
            }
            precondition(checksum != 0 || records == 0)
            return (records, payloadBytes)
        }
    }
}

/// One stored event, decoded from its row.
struct SQLiteEvent: FetchableRecord {
    let position: Int64
    let stream: String
    let version: Int64
    let eventID: UUID
    let type: String
    let timestamp: Date
    let metadata: EventMetadata
    let payload: Data

    init(row: GRDB.Row) throws {
        position = row[0]
        stream = row[1]
        version = row[2]
        eventID = row[3]
        type = row[4]
        timestamp = Date(timeIntervalSince1970: Double(row[5] as Int64) / 1_000_000)
        metadata = try decodeMetadata(row[6])
        payload = row[7]
    }
}

/// The metadata's stored form: key, 0, value, 0 for every pair (no JSON coder per event).
func encodeMetadata(_ metadata: EventMetadata) -> Data {
    var bytes: [UInt8] = []
    func add(_ key: String, _ value: String?) {
        guard let value else { return }
        bytes.append(contentsOf: key.utf8)
        bytes.append(0)
        bytes.append(contentsOf: value.utf8)
        bytes.append(0)
    }
    add("actor", metadata.actor)
    add("correlation-id", metadata.correlationID)
    add("causation-id", metadata.causationID)
    for (key, value) in metadata.extra where !EventMetadata.reservedKeys.contains(key) { add(key, value) }
    return Data(bytes)
}

struct MalformedMetadata: Error {}

func decodeMetadata(_ data: Data) throws -> EventMetadata {
    var metadata = EventMetadata()
    let fields = data.split(separator: 0, omittingEmptySubsequences: false)
    guard fields.count % 2 == 1, fields.last?.isEmpty ?? false else { throw MalformedMetadata() }
    var index = fields.startIndex
    while index + 1 < fields.endIndex {
        let key = String(decoding: fields[index], as: UTF8.self)
        let value = String(decoding: fields[index + 1], as: UTF8.self)
        switch key {
        case "actor": metadata.actor = value
        case "correlation-id": metadata.correlationID = value
        case "causation-id": metadata.causationID = value
        default: metadata.extra[key] = value
        }
        index += 2
    }
    return metadata
}
