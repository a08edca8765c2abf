//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import PostgresNIO

extension StoredDetails: PostgresCodable {}
extension DetailSet: PostgresCodable {}

/// The peer's tables in PostgreSQL, through postgres-nio's `PostgresClient` (a pool of
/// connections) and prepared statements: `accounts` (uuid key, a unique index on the normalized
/// user id, the password hash, the details as jsonb) and `sessions` (the token's SHA-256 → the
/// account, its expiry). Every write is one statement in its own transaction, committed with the
/// server's `synchronous_commit` (on by default: the commit waits for the WAL's flush).
final class PostgresPeerStorage: PeerStorage {
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger

    init(port: Int, connections: Int) async throws {
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: port, username: "postgres", password: nil, database: "postgres", tls: .disable)
        configuration.options.maximumConnections = connections
        var logger = Logger(label: "crud-peer.postgres")
        logger.logLevel = .warning
        self.logger = logger
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        runner = Task.immediate { await client.run() }
        for statement in [
            """
            CREATE TABLE IF NOT EXISTS accounts (
                id uuid PRIMARY KEY, user_id text NOT NULL, password_hash text NOT NULL, details jsonb NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())
            """,
            "CREATE UNIQUE INDEX IF NOT EXISTS accounts_user_id ON accounts (user_id)",
            """
            CREATE TABLE IF NOT EXISTS sessions (
                token_hash bytea PRIMARY KEY, account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                expires_at timestamptz NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS sessions_account_id ON sessions (account_id)"
        ] {
            try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    /// The server's durability settings, for the report: `synchronous_commit` and `fsync`.
    func settings() async throws -> String {
        var result: [String] = []
        for name in ["synchronous_commit", "fsync"] {
            let rows = try await client.query(PostgresQuery(unsafeSQL: "SHOW \(name)"), logger: logger)
            for try await value in rows.decode(String.self) { result.append("\(name)=\(value)") }
        }
        return result.joined(separator: ", ")
    }

    func signup(accountId: UUID, userId: String, passwordHash: String, details: StoredDetails, session: NewSession) async throws -> Bool {
        do {
            try await drain(
                client.execute(Signup(accountId: accountId, userId: userId, passwordHash: passwordHash, details: details, session: session)))
            return true
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == PostgresError.Code.uniqueViolation.raw {
            return false
        }
    }

    func credentials(userId: String) async throws -> Credentials? {
        for try await row in try await client.execute(SelectCredentials(userId: userId)) {
            return Credentials(accountId: row.0, passwordHash: row.1, details: row.2)
        }
        return nil
    }

    func startSession(_ session: NewSession) async throws {
        try await drain(client.execute(InsertSession(session: session)))
    }

    func account(tokenHash: Data, now: Date) async throws -> (UUID, StoredDetails)? {
        for try await row in try await client.execute(SelectSession(tokenHash: tokenHash, now: now)) {
            return row
        }
        return nil
    }

    func modify(accountId: UUID, set: DetailSet, remove: [String]) async throws -> StoredDetails? {
        for try await details in try await client.execute(UpdateDetails(accountId: accountId, set: set, remove: remove)) {
            return details
        }
        return nil
    }

    func close() async {
        runner.cancel()
        await runner.value
    }

    private func drain<Rows: AsyncSequence>(_ rows: Rows) async throws {
        for try await _ in rows {}
    }
}

// MARK: Statements

/// The account and its first session, one statement (one transaction).
private struct Signup: PostgresPreparedStatement {
    static let sql = """
        WITH account AS (INSERT INTO accounts (id, user_id, password_hash, details) VALUES ($1, $2, $3, $4) RETURNING id)
        INSERT INTO sessions (token_hash, account_id, expires_at) SELECT $5, id, $6 FROM account
        """
    typealias Row = Void
    let accountId: UUID
    let userId: String
    let passwordHash: String
    let details: StoredDetails
    let session: NewSession

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(accountId)
        bindings.append(userId)
        bindings.append(passwordHash)
        try bindings.append(details)
        try bindings.append(session.tokenHash)
        bindings.append(session.expiresAt)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}

private struct SelectCredentials: PostgresPreparedStatement {
    static let sql = "SELECT id, password_hash, details FROM accounts WHERE user_id = $1"
    typealias Row = (UUID, String, StoredDetails)
    let userId: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(userId)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

private struct InsertSession: PostgresPreparedStatement {
    static let sql = "INSERT INTO sessions (token_hash, account_id, expires_at) VALUES ($1, $2, $3)"
    typealias Row = Void
    let session: NewSession

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        try bindings.append(session.tokenHash)
        bindings.append(session.accountId)
        bindings.append(session.expiresAt)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}

/// The session check and the account's details, one index lookup each.
private struct SelectSession: PostgresPreparedStatement {
    static let sql = """
        SELECT a.id, a.details FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = $1 AND s.expires_at > $2
        """
    typealias Row = (UUID, StoredDetails)
    let tokenHash: Data
    let now: Date

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        try bindings.append(tokenHash)
        bindings.append(now)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// A shallow merge of the values set, minus the keys removed.
private struct UpdateDetails: PostgresPreparedStatement {
    static let sql = "UPDATE accounts SET details = (details || $2) - $3::text[], updated_at = now() WHERE id = $1 RETURNING details"
    typealias Row = StoredDetails
    let accountId: UUID
    let set: DetailSet
    let remove: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(accountId)
        try bindings.append(set)
        bindings.append(remove)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(StoredDetails.self) }
}
