//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import Hummingbird
import Logging
import NIOPosix
import SpeziAccountStore

/// A session to store: the SHA-256 of its token (the token itself is never stored).
struct NewSession: Sendable {
    let tokenHash: Data
    let accountId: UUID
    let expiresAt: Date
}

/// An account's row as a login reads it.
struct Credentials: Sendable {
    let accountId: UUID
    let passwordHash: String
    let details: StoredDetails
}

/// Where the peer keeps its accounts and sessions: one table each, one durable commit per write.
protocol PeerStorage: Sendable {
    /// Inserts the account and its first session in one transaction; false when the user id has an account.
    func signup(accountId: UUID, userId: String, passwordHash: String, details: StoredDetails, session: NewSession) async throws -> Bool
    /// The account of a (normalized) user id.
    func credentials(userId: String) async throws -> Credentials?
    /// Inserts a session.
    func startSession(_ session: NewSession) async throws
    /// The account an unexpired session's token hash signs in.
    func account(tokenHash: Data, now: Date) async throws -> (UUID, StoredDetails)?
    /// Merges `set` into the account's details, removes the keys `remove` names; nil for no such account.
    func modify(accountId: UUID, set: DetailSet, remove: [String]) async throws -> StoredDetails?
    /// The storage's durability settings, for the report.
    func settings() async throws -> String
    /// Ends the storage's connections.
    func close() async
}

/// The plain CRUD account server: the routes `server-load` puts under load (signup, login, the
/// signed-in account's details and their modification), with the account server's JSON shapes and
/// status codes, on Hummingbird 2 over a ``PeerStorage``. Passwords are hashed with the store's
/// `PasswordHasher` at its default (Argon2id at OWASP's first choice) on threads of their own, as
/// many as there are cores, as the store does; sessions are random 32-byte bearer tokens whose
/// SHA-256 is stored.
public struct CRUDPeerServer: Sendable {
    let storage: any PeerStorage
    let hasher: PasswordHasher
    let hashing: NIOThreadPool
    /// A hash of a password nobody has: an unknown user id costs a login the same derivation.
    let decoyHash: String
    let sessionValidity: TimeInterval = 24 * 3_600

    /// A peer on PostgreSQL (`postgres` database of the server on 127.0.0.1:`port`, user `postgres`).
    public static func postgres(port: Int, connections: Int, hasher: PasswordHasher? = nil) async throws -> CRUDPeerServer {
        try await CRUDPeerServer(storage: PostgresPeerStorage(port: port, connections: connections), hasher: hasher)
    }

    /// A peer on SQLite (WAL, synchronous=FULL) in `directory`.
    public static func sqlite(directory: URL, hasher: PasswordHasher? = nil) async throws -> CRUDPeerServer {
        try await CRUDPeerServer(storage: SQLitePeerStorage(directory: directory), hasher: hasher)
    }

    /// `hasher`: the store's default (Argon2id) unless given.
    init(storage: any PeerStorage, hasher: PasswordHasher?) async throws {
        self.storage = storage
        self.hasher = try hasher ?? PasswordHasher()
        hashing = NIOThreadPool(numberOfThreads: max(1, ProcessInfo.processInfo.activeProcessorCount))
        hashing.start()
        let hasher = self.hasher
        decoyHash = try await hashing.runIfActive { try hasher.hash(UUID().uuidString) }
    }

    /// Serves on 127.0.0.1 (port 0: a free one) until the task is cancelled; `onListening` gets the port.
    public func run(port: Int = 0, onListening: @escaping @Sendable (Int) async -> Void) async throws {
        let router = Router()
        let logger = Logger(label: "crud-peer")
        // One line per request, as the account server's access log writes (before the routes:
        // a middleware covers only the routes added after it).
        router.add(middleware: AccessLog(logger: logger))
        router.post("/v1/accounts") { request, context in try await signup(request, context) }
        router.post("/v1/sessions") { request, context in try await login(request, context) }
        router.get("/v1/account") { request, _ in
            let (accountId, details) = try await authenticate(request)
            return try PeerJSON.response(AccountBody(accountId, details))
        }
        router.patch("/v1/account") { request, context in try await modify(request, context) }
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port), serverName: "crud-peer"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) }, logger: logger)
        try await app.run()
    }

    /// The storage's durability settings (PostgreSQL's `synchronous_commit` and `fsync`, SQLite's
    /// journal mode and `synchronous`).
    public func storageSettings() async throws -> String {
        try await storage.settings()
    }

    /// Ends the storage's connections and the hashing threads.
    public func close() async {
        await storage.close()
        try? await hashing.shutdownGracefully()
    }

    /// Its method, route, status and time taken, at the info level.
    struct AccessLog: RouterMiddleware {
        let logger: Logger

        func handle(
            _ request: Request, context: BasicRequestContext, next: (Request, BasicRequestContext) async throws -> Response
        )
            async throws -> Response
        {
            let start = ContinuousClock.now
            var status = 500
            defer {
                let elapsed = (ContinuousClock.now - start).components
                let milliseconds = Double(elapsed.seconds) * 1_000 + Double(elapsed.attoseconds) / 1e15
                logger.info(
                    "request",
                    metadata: [
                        "method": "\(request.method)", "route": "\(context.endpointPath ?? "unmatched")", "status": "\(status)",
                        "ms": "\(String(format: "%.2f", milliseconds))"
                    ])
            }
            do {
                let response = try await next(request, context)
                status = response.status.code
                return response
            } catch let error as any HTTPResponseError {
                status = error.status.code
                throw error
            }
        }
    }

    // MARK: Routes

    private func signup(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let values = try await request.decode(as: DetailValues.self, context: context)
        try values.validate()
        guard let userId = values.userId, let password = values.password, let name = values.name else {
            throw PeerProblem.invalidDetails("userId, password and name are required")
        }
        let details = StoredDetails(
            userId: userId, name: name, email: values.email ?? nil, dateOfBirth: values.dateOfBirth ?? nil,
            genderIdentity: values.genderIdentity ?? nil)
        let hasher = hasher
        let passwordHash = try await hashing.runIfActive { try hasher.hash(password) }
        let accountId = UUID()
        let (token, session) = makeSession(for: accountId)
        guard
            try await storage.signup(
                accountId: accountId, userId: Self.normalized(userId), passwordHash: passwordHash, details: details, session: session)
        else {
            throw PeerProblem.userIdTaken
        }
        let body = SessionBody(
            token: token, expiresAt: PeerJSON.timestamp(session.expiresAt), account: AccountBody(accountId, details, isNewUser: true))
        return try PeerJSON.response(body, status: .created)
    }

    private func login(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let login = try await request.decode(as: LoginBody.self, context: context)
        guard login.userId.utf8.count <= 320, login.password.utf8.count <= 4_096 else { throw PeerProblem.wrongCredentials }
        let account = try await storage.credentials(userId: Self.normalized(login.userId))
        let (hasher, password, stored) = (hasher, login.password, account?.passwordHash ?? decoyHash)
        let matches = try await hashing.runIfActive { try hasher.verify(password, against: stored) }
        guard let account, matches else { throw PeerProblem.wrongCredentials }
        let (token, session) = makeSession(for: account.accountId)
        try await storage.startSession(session)
        let body = SessionBody(
            token: token, expiresAt: PeerJSON.timestamp(session.expiresAt), account: AccountBody(account.accountId, account.details))
        return try PeerJSON.response(body, status: .created)
    }

    private func modify(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let (accountId, _) = try await authenticate(request)
        let change = try await request.decode(as: ModifyBody.self, context: context)
        let values = change.set
        try values?.validate()
        // Changing the user id or the password (with the current password, ending the other
        // sessions) is not part of the load and not built here.
        guard values?.userId == nil, values?.password == nil else {
            throw PeerProblem.invalidDetails("this peer does not change the user id or the password")
        }
        var remove = try (change.remove ?? []).map { key in
            guard ["dateOfBirth", "genderIdentity", "email"].contains(key) else { throw PeerProblem.invalidDetails("cannot remove \(key)") }
            return key
        }
        if case .some(.none) = values?.email { remove.append("email") }
        if case .some(.none) = values?.dateOfBirth { remove.append("dateOfBirth") }
        if case .some(.none) = values?.genderIdentity { remove.append("genderIdentity") }
        let set = DetailSet(
            name: values?.name, email: values?.email ?? nil, dateOfBirth: values?.dateOfBirth ?? nil, genderIdentity: values?.genderIdentity ?? nil)
        guard let details = try await storage.modify(accountId: accountId, set: set, remove: remove) else { throw PeerProblem.invalidSession }
        return try PeerJSON.response(ModifiedBody(account: AccountBody(accountId, details)))
    }

    // MARK: Sessions

    /// The account of the request's bearer token (401 for none, a malformed or an unknown one).
    private func authenticate(_ request: Request) async throws -> (UUID, StoredDetails) {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { throw PeerProblem.invalidSession }
        let token = header.dropFirst("Bearer ".count)
        guard token.utf8.count == 43 else { throw PeerProblem.invalidSession }
        guard let account = try await storage.account(tokenHash: Self.hash(token), now: Date()) else { throw PeerProblem.invalidSession }
        return account
    }

    /// A new token (32 random bytes, base64url) and the session that stores its hash.
    private func makeSession(for accountId: UUID) -> (String, NewSession) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let token = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return (token, NewSession(tokenHash: Self.hash(token[...]), accountId: accountId, expiresAt: Date().addingTimeInterval(sessionValidity)))
    }

    private static func hash(_ token: Substring) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }

    /// User ids compare without case and surrounding white space.
    private static func normalized(_ userId: String) -> String {
        userId.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }
}
