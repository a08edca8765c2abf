//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import GRDB
import SpeziAccountStore

/// The same event store on SQLite, through GRDB, built the way a competent user would: one
/// `events` table with a global autoincrement position, a unique (stream, version) index and a
/// unique event id; an `accounts` table (account id → the folded state) for the details; WAL mode;
/// cached prepared statements; one transaction per append that reads the stream's version, checks
/// it, inserts and (where the workload keeps details) updates the account's row. SQLite has one
/// writer at a time and no group commit, so concurrent appenders queue on GRDB's writer and each
/// pays its own commit.
final class SQLitePeer: Sendable {
    let pool: DatabasePool

    enum Sync: Int {
        /// An fsync of the WAL at every commit.
        case full = 2
        /// No fsync at commit, only at checkpoints: a power loss may undo the last commits.
        case normal = 1
        /// No fsync at all.
        case off = 0
    }

    struct WrongExpectedVersion: Error, CustomStringConvertible {
        let stream: String
        let expected: ExpectedVersion
        let actual: Int64
        var description: String { "stream \(stream) is at version \(actual), expected \(expected)" }
    }

    /// Opens (creating) `events.sqlite` in `directory`.
    init(directory: URL, sync: Sync) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.maximumReaderCount = 8
        // A pool puts the database in WAL mode (and then sets synchronous=NORMAL on its writer).
        pool = try DatabasePool(path: directory.appendingPathComponent("events.sqlite").path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(sync.rawValue)")
            let journal = try String.fetchOne(db, sql: "PRAGMA journal_mode")
            let synchronous = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            precondition(journal == "wal" && synchronous == sync.rawValue, "SQLite is not set up as intended")
            try db.execute(
                sql: """
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
                    CREATE TABLE IF NOT EXISTS accounts (
                        account_id TEXT PRIMARY KEY NOT NULL,
                        state BLOB NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
    }

    convenience init(directory: URL, durable: Bool) throws {
        try self.init(directory: directory, sync: durable ? .full : .off)
    }

    // MARK: Appending

    /// Appends `events` to `stream` in one transaction; returns the last position and the
    /// stream's new version.
    @discardableResult
    func append(
        _ events: [ProposedEvent], to stream: String, expectedVersion: ExpectedVersion = .any
    ) async throws -> (position: Int64, version: Int64) {
        try await pool.write { db in
            try Self.append(db, events, to: stream, expectedVersion: expectedVersion)
        }
    }

    /// The same, blocking the calling thread.
    @discardableResult
    func appendBlocking(
        _ events: [ProposedEvent], to stream: String, expectedVersion: ExpectedVersion = .any
    ) throws -> (position: Int64, version: Int64) {
        try pool.write { db in
            try Self.append(db, events, to: stream, expectedVersion: expectedVersion)
        }
    }

    /// Appends one account event and folds it into the account's row, in one transaction; returns
    /// its position.
    func appendAndProject(_ event: AccountEvent, proposed: ProposedEvent, to stream: String) throws -> Int64 {
        try pool.write { db in
            let (position, version) = try Self.append(db, [proposed], to: stream, expectedVersion: .any)
            try Self.fold(db, event, stream: stream, version: UInt64(version), at: Date())
            return position
        }
    }

    static func append(
        _ db: Database, _ events: [ProposedEvent], to stream: String, expectedVersion: ExpectedVersion
    ) throws -> (position: Int64, version: Int64) {
        let current = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(version) FROM events WHERE stream = ?"), arguments: [stream]) ?? 0
        switch expectedVersion {
        case .any: break
        case .noStream: guard current == 0 else { throw WrongExpectedVersion(stream: stream, expected: expectedVersion, actual: current) }
        case let .exact(version):
            guard current == Int64(version) else { throw WrongExpectedVersion(stream: stream, expected: expectedVersion, actual: current) }
        }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO events (stream, version, event_id, type, timestamp, metadata, payload) VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
        let timestamp = microsecondsNow()
        var version = current
        for event in events {
            version += 1
            try insert.execute(arguments: [stream, version, event.eventID, event.type, timestamp, encodeMetadata(event.metadata), event.payload])
        }
        return (db.lastInsertedRowID, version)
    }

    // MARK: The details table

    /// Folds `event` into the account's row: read the state, apply, write it back.
    static func fold(_ db: Database, _ event: AccountEvent, stream: String, version: UInt64, at time: Date) throws {
        let previous = try Row.fetchOne(db.cachedStatement(sql: "SELECT state FROM accounts WHERE account_id = ?"), arguments: [stream])
            .map { row in try row.withUnsafeData(atIndex: 0) { try AccountState(encoded: [UInt8]($0 ?? Data())) } }
        guard let next = AccountState.applying(event, to: previous, accountId: stream, version: version, at: time) else { return }
        try db.cachedStatement(
            sql: """
                INSERT INTO accounts (account_id, state) VALUES (?, ?) ON CONFLICT(account_id) DO UPDATE SET state = excluded.state
                """
        ).execute(arguments: [stream, Data(next.encoded())])
    }

    /// Builds the accounts table from the events in one pass, `batchSize` events per transaction;
    /// returns the number of events folded.
    func rebuildAccounts(batchSize: Int = 4_096) throws -> Int {
        try pool.write { db in try db.execute(sql: "DELETE FROM accounts") }
        var after: Int64 = 0
        var folded = 0
        while true {
            let count = try pool.write { db -> Int in
                let rows = try Row.fetchCursor(
                    db.cachedStatement(
                        sql: """
                            SELECT position, stream, version, type, timestamp, payload FROM events WHERE position > ? ORDER BY position LIMIT ?
                            """), arguments: [after, batchSize])
                var count = 0
                while let row = try rows.next() {
                    let stream: String = row[1]
                    let event = try row.withUnsafeData(atIndex: 5) { data in
                        try (data ?? Data()).withUnsafeBytes { try AccountEvent.decode(type: row[3], payload: $0) }
                    }
                    try Self.fold(
                        db, event, stream: stream, version: UInt64(row[2] as Int64),
                        at: Date(timeIntervalSince1970: Double(row[4] as Int64) / 1_000_000))
                    after = row[0]
                    count += 1
                }
                return count
            }
            folded += count
            if count < batchSize { return folded }
        }
    }

    /// One account's state from the accounts table, or nil.
    func state(of accountId: String) throws -> AccountState? {
        try pool.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT state FROM accounts WHERE account_id = ?"), arguments: [accountId])
                .map { row in try row.withUnsafeData(atIndex: 0) { try AccountState(encoded: [UInt8]($0 ?? Data())) } }
        }
    }

    // MARK: Reading

    /// Reads every event in position order and decodes its payload in place into an
    /// `AccountEvent`; `body` sees each. Returns the count.
    func replay(_ body: (Int64, AccountEvent) -> Void) throws -> Int {
        try pool.read { db in
            let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT position, stream, version, type, payload FROM events ORDER BY position"))
            var records = 0
            while let row = try rows.next() {
                let event = try row.withUnsafeData(atIndex: 4) { data in
                    try (data ?? Data()).withUnsafeBytes { try AccountEvent.decode(type: row[3], payload: $0) }
                }
                body(row[0], event)
                records += 1
            }
            return records
        }
    }

    /// Reads every event in position order and checks its payload in place through an
    /// `AccountEventView`; `body` sees each. Returns the count.
    func replayViews(_ body: (Int64, AccountEventView) -> Void) throws -> Int {
        try pool.read { db in
            let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT position, stream, version, type, payload FROM events ORDER BY position"))
            var records = 0
            while let row = try rows.next() {
                let type: String = row[3]
                guard let kind = AccountEvent.Kind(name: type) else { throw PayloadDecodingError.unknownEventType(type) }
                try row.withUnsafeData(atIndex: 4) { data in
                    try (data ?? Data()).withUnsafeBytes { body(row[0], try AccountEventView(kind, payload: $0)) }
                }
                records += 1
            }
            return records
        }
    }

    /// Steps through every event in position order, reading the same columns as `replay` but
    /// decoding nothing; returns the payloads' total size.
    func payloadBytes() throws -> Int {
        try pool.read { db in
            let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT position, stream, version, type, payload FROM events ORDER BY position"))
            var bytes = 0
            while let row = try rows.next() {
                bytes &+= try row.withUnsafeData(atIndex: 4) { $0?.count ?? 0 }
            }
            return bytes
        }
    }

    /// Reads every event in position order into an `SQLiteEvent` (payload and metadata copied), then
    /// decodes the payload: the counterpart of the log's `replay` of `RecordedEvent`s.
    func replayCopied(_ body: (SQLiteEvent, AccountEvent) -> Void) throws -> Int {
        try pool.read { db in
            let events = try SQLiteEvent.fetchCursor(db.cachedStatement(sql: Self.selectAll))
            var records = 0
            while let event = try events.next() {
                body(event, try event.payload.withUnsafeBytes { try AccountEvent.decode(type: event.type, payload: $0) })
                records += 1
            }
            return records
        }
    }

    static let selectAll = "SELECT position, stream, version, event_id, type, timestamp, metadata, payload FROM events ORDER BY position"

    /// The events after `position` (at most `limit`), decoded, for a catch-up subscriber.
    func events(after position: Int64, limit: Int) throws -> [(position: Int64, event: AccountEvent)] {
        try pool.read { db in
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT position, type, payload FROM events WHERE position > ? ORDER BY position LIMIT ?"),
                arguments: [position, limit])
            var events: [(Int64, AccountEvent)] = []
            while let row = try rows.next() {
                let event = try row.withUnsafeData(atIndex: 2) { data in
                    try (data ?? Data()).withUnsafeBytes { try AccountEvent.decode(type: row[1], payload: $0) }
                }
                events.append((row[0], event))
            }
            return events
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
    for (key, value) in metadata.extra.sorted(by: { $0.key < $1.key }) where !EventMetadata.reservedKeys.contains(key) { add(key, value) }
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
