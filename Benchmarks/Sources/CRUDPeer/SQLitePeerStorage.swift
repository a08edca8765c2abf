//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import GRDB

/// The peer's tables in SQLite, through GRDB: the same `accounts` and `sessions` tables as on
/// PostgreSQL (the details as JSON text), a `DatabasePool` (WAL; readers beside the one writer),
/// `synchronous=FULL` (every commit flushes the WAL) and cached prepared statements. GRDB runs
/// the statements on its own queues, off Swift's cooperative pool.
final class SQLitePeerStorage: PeerStorage {
    private let pool: DatabasePool

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.maximumReaderCount = 8
        pool = try DatabasePool(path: directory.appendingPathComponent("accounts.sqlite").path, configuration: configuration)
        // A pool sets synchronous=NORMAL on its one writer connection; a durable commit needs FULL.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try pool.write { db in
            let journal = try String.fetchOne(db, sql: "PRAGMA journal_mode")
            let synchronous = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            precondition(journal == "wal" && synchronous == 2, "SQLite is not set up as intended")
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS accounts (
                        id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, password_hash TEXT NOT NULL, details TEXT NOT NULL,
                        created_at REAL NOT NULL, updated_at REAL NOT NULL) WITHOUT ROWID;
                    CREATE UNIQUE INDEX IF NOT EXISTS accounts_user_id ON accounts (user_id);
                    CREATE TABLE IF NOT EXISTS sessions (
                        token_hash BLOB PRIMARY KEY NOT NULL, account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                        expires_at REAL NOT NULL) WITHOUT ROWID;
                    CREATE INDEX IF NOT EXISTS sessions_account_id ON sessions (account_id);
                    """)
        }
    }

    func signup(accountId: UUID, userId: String, passwordHash: String, details: StoredDetails, session: NewSession) async throws -> Bool {
        let json = try Self.json(details)
        do {
            try await pool.write { db in
                let now = Date().timeIntervalSince1970
                try db.cachedStatement(
                    sql: "INSERT INTO accounts (id, user_id, password_hash, details, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
                )
                .execute(arguments: [accountId.uuidString, userId, passwordHash, json, now, now])
                try Self.insert(session, db)
            }
            return true
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            return false
        }
    }

    func credentials(userId: String) async throws -> Credentials? {
        // Plain values out of the read (a GRDB `Row` is not `Sendable`, and only the async read,
        // which runs on GRDB's queue, takes a `Sendable` result).
        let row: (String, String, String)? = try await pool.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT id, password_hash, details FROM accounts WHERE user_id = ?"), arguments: [userId])
                .map { ($0[0], $0[1], $0[2]) }
        }
        guard let row, let id = UUID(uuidString: row.0) else { return nil }
        return Credentials(accountId: id, passwordHash: row.1, details: try Self.details(row.2))
    }

    func startSession(_ session: NewSession) async throws {
        try await pool.write { db in try Self.insert(session, db) }
    }

    func account(tokenHash: Data, now: Date) async throws -> (UUID, StoredDetails)? {
        let row: (String, String)? = try await pool.read { db in
            try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT a.id, a.details FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ? AND s.expires_at > ?"),
                arguments: [tokenHash, now.timeIntervalSince1970]
            ).map { ($0[0], $0[1]) }
        }
        guard let row, let id = UUID(uuidString: row.0) else { return nil }
        return (id, try Self.details(row.1))
    }

    func modify(accountId: UUID, set: DetailSet, remove: [String]) async throws -> StoredDetails? {
        // An RFC 7396 merge patch: the values set, and null for each key removed.
        var patch = try JSONSerialization.jsonObject(with: PeerJSON.encoder.encode(set)) as? [String: Any] ?? [:]
        for key in remove { patch[key] = NSNull() }
        let patchText = String(decoding: try JSONSerialization.data(withJSONObject: patch), as: UTF8.self)
        let json = try await pool.write { db in
            try String.fetchOne(
                db.cachedStatement(sql: "UPDATE accounts SET details = json_patch(details, ?), updated_at = ? WHERE id = ? RETURNING details"),
                arguments: [patchText, Date().timeIntervalSince1970, accountId.uuidString])
        }
        return try json.map(Self.details)
    }

    func settings() async throws -> String {
        try await pool.write { db in
            "journal_mode=\(try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "?"), synchronous=\(try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1)"
        }
    }

    func close() async {
        try? pool.close()
    }

    private static func insert(_ session: NewSession, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT INTO sessions (token_hash, account_id, expires_at) VALUES (?, ?, ?)")
            .execute(arguments: [session.tokenHash, session.accountId.uuidString, session.expiresAt.timeIntervalSince1970])
    }

    private static func json(_ details: StoredDetails) throws -> String {
        String(decoding: try PeerJSON.encoder.encode(details), as: UTF8.self)
    }

    private static func details(_ json: String) throws -> StoredDetails {
        try JSONDecoder().decode(StoredDetails.self, from: Data(json.utf8))
    }
}
