//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import KeyVaultStorage
import Logging
import PostgresNIO
import Synchronization

/// The key vault in two tables beside a PostgreSQL log, shared by every app server on that log
/// (POSTGRES.md, "The key vault"): `key_vault` holds the 64-byte header, `key_slots` one row of
/// 128 bytes per slot, both in the vault file's layout (FORMAT.md).
///
/// The vault calls it from a dedicated thread, one call at a time, and the calls block that
/// thread: they run on a connection of their own through SwiftNIO futures, which need no thread
/// of Swift's cooperative pool, so a blocked caller can never starve the pool that would answer
/// it. ``withLock(exclusive:_:)`` is a transaction holding a transaction-level advisory lock;
/// writes become durable at its commit (`synchronous_commit = on` whatever the log's durability).
/// A lost connection fails the call in progress with a clear error; the next call connects again.
///
/// Every wait has a deadline (the `timeout`): connecting (a server that accepts the TCP
/// connection but never finishes the startup, because it is paused or still starting, would
/// otherwise hold the thread for ever), each query and the advisory lock. A call past its deadline
/// fails with ``PostgresVaultError/timedOut(_:)`` and drops its connection (closing the
/// connection ends the transaction and its lock on the server); the next call connects again.
/// Failures of the server or the connection are transient (``TransientFailure``): the caller may
/// retry them. An outage is logged once when it begins and once, with its duration, when a call
/// succeeds again.
package final class PostgresVaultStorage: KeyVaultStorage {
    /// Nodes share the vault: none can tell whether it is alone (see `KeyVaultStorage`).
    package let openedAlone = false
    package let location: String
    private let settings: PostgresLogLocation
    /// The server the vault's connection goes to (``PostgresLogLocation/server``).
    private let server: String
    private let timeout: Duration
    private let logger: Logger
    private let connection = Mutex<PostgresConnection?>(nil)
    /// The connection of the transaction under way (``withLock(exclusive:_:)``), or nil.
    private let transactionConnection = Mutex<PostgresConnection?>(nil)
    private let outage: PostgresOutage

    /// The advisory-lock key of a schema's vault (the log's own lock uses `hashtext(schema)`).
    private var lockKey: String { "spezi-key-vault:" + settings.schema }

    /// Connects and creates the tables when they are missing. With `create`, a vault without a
    /// header gets one (`header`, made by the caller); without it, a missing header is
    /// ``PostgresVaultError/missing(location:)``.
    ///
    /// `timeout` bounds each wait (connect, statement, lock). The vault's statements are small and
    /// its transactions short, so 5 s is ample; a statement caught by a crash of the server (its
    /// connection neither answering nor closing) then holds the vault's one thread, and every
    /// node's projections behind it, for 5 s rather than 15.
    package convenience init(location: PostgresLogLocation, create header: [UInt8]?, timeout: Duration = .seconds(5)) throws {
        self.init(unopened: location, timeout: timeout)
        try transaction { connection in
            _ = try run(connection, "SELECT pg_advisory_xact_lock(hashtext(\(lockKey)))")
            for statement in Self.tables { _ = try run(connection, PostgresQuery(unsafeSQL: statement)) }
            if let header {
                _ = try run(connection, "INSERT INTO key_vault (header) VALUES (\(ByteBuffer(bytes: header))) ON CONFLICT (id) DO NOTHING")
            }
        }
        if header == nil, try readHeaderIfPresent() == nil { throw PostgresVaultError.missing(location: self.location) }
    }

    deinit {
        release()
    }

    /// Whether the log at `location` has a key vault (its header row), without creating anything.
    package static func exists(at location: PostgresLogLocation) throws -> Bool {
        let probe = PostgresVaultStorage(unopened: location, timeout: .seconds(15))
        defer { probe.release() }
        let rows = try probe.run(
            try probe.connected(),
            "SELECT count(*)::bigint FROM pg_tables WHERE schemaname = \(location.schema) AND tablename = 'key_vault'")
        guard let count = try rows.first?.decode(Int64.self), count > 0 else { return false }
        return try probe.readHeaderIfPresent() != nil
    }

    /// The storage for `location`, not connected yet (nothing is created).
    private init(unopened location: PostgresLogLocation, timeout: Duration) {
        settings = location
        server = location.server
        self.location = "\(location) (key vault)"
        self.timeout = timeout
        var logger = Logger(label: "PostgresEventLog.vault")
        logger.logLevel = .warning
        self.logger = logger
        outage = PostgresOutage("the key vault at \(location)", logger: logger, server: server)
    }

    package func readHeader() throws -> [UInt8] {
        guard let header = try readHeaderIfPresent() else { throw PostgresVaultError.missing(location: location) }
        return header
    }

    private func readHeaderIfPresent() throws -> [UInt8]? {
        let rows = try run(try connected(), "SELECT header FROM key_vault")
        return try rows.first.map { try $0.decode(ByteBuffer.self) }.map { Array($0.readableBytesView) }
    }

    package func writeHeaderID(_ id: [UInt8]) throws {
        try transaction { connection in
            _ = try run(
                connection,
                "UPDATE key_vault SET header = overlay(header placing \(ByteBuffer(bytes: id)) from 49 for 16)")
        }
    }

    package func withLock<T>(exclusive: Bool, _ body: () throws -> T) throws -> T {
        try transaction { connection in
            if exclusive {
                _ = try run(connection, "SELECT pg_advisory_xact_lock(hashtext(\(lockKey)))")
            } else {
                _ = try run(connection, "SELECT pg_advisory_xact_lock_shared(hashtext(\(lockKey)))")
            }
            return try body()
        }
    }

    package func readSlots(from first: Int) throws -> [UInt8] {
        let rows = try run(try connected(), "SELECT slot, bytes FROM key_slots WHERE slot >= \(Int64(first)) ORDER BY slot")
        var bytes: [UInt8] = []
        var next = Int64(first)
        for row in rows {
            let (slot, value) = try row.decode((Int64, ByteBuffer).self)
            // A number never written (a transaction rolled back after taking it) reads as zeros.
            while next < slot {
                bytes += [UInt8](repeating: 0, count: KeyVaultLayout.slotSize)
                next += 1
            }
            guard value.readableBytes == KeyVaultLayout.slotSize else {
                throw PostgresVaultError.damaged(location: location, reason: "slot \(slot) has \(value.readableBytes) bytes, not 128")
            }
            bytes += value.readableBytesView
            next = slot + 1
        }
        return bytes
    }

    package func readSlot(_ number: Int) throws -> [UInt8] {
        let rows = try run(try connected(), "SELECT bytes FROM key_slots WHERE slot = \(Int64(number))")
        guard let value = try rows.first?.decode(ByteBuffer.self) else { return [UInt8](repeating: 0, count: KeyVaultLayout.slotSize) }
        return Array(value.readableBytesView)
    }

    package func writeSlots(_ bytes: [UInt8], at first: Int) throws {
        let size = KeyVaultLayout.slotSize
        precondition(bytes.count % size == 0, "whole slots only")
        let numbers = (0..<(bytes.count / size)).map { Int64(first + $0) }
        let values = numbers.indices.map { ByteBuffer(bytes: bytes[($0 * size)..<(($0 + 1) * size)]) }
        let write = { [self] (connection: PostgresConnection) throws in
            _ = try run(
                connection,
                """
                INSERT INTO key_slots (slot, bytes) SELECT * FROM unnest(\(numbers)::bigint[], \(values)::bytea[])
                ON CONFLICT (slot) DO UPDATE SET bytes = excluded.bytes
                """)
        }
        try transaction(write)
    }

    package func release() {
        let open = connection.withLock { connection in
            defer { connection = nil }
            return connection
        }
        if let open { _ = try? wait(open.close(), doing: "close its connection") }
    }

    // MARK: The connection

    /// The open connection, or a new one.
    private func connected() throws -> PostgresConnection {
        if let inTransaction = transactionConnection.withLock({ $0 }) {
            // Inside a transaction every statement runs on its connection, under its lock: once
            // that connection is gone, so are the transaction and the lock, and a new connection
            // would write outside both.
            guard connection.withLock({ $0 === inTransaction }), !inTransaction.isClosed else {
                throw noteFailure(PostgresVaultError.server("the key vault at \(location) lost its connection in a transaction"))
            }
            return inTransaction
        }
        if let open = connection.withLock({ $0 }), !open.isClosed { return open }
        let configuration: PostgresConnection.Configuration
        do {
            configuration = try settings.connectionConfiguration(
                applicationName: "spezi-account-store key vault", durable: true, connectTimeout: timeout)
        } catch {
            throw PostgresVaultError.server("cannot set up TLS for \(location): \(error)")
        }
        let eventLoop = PostgresConnection.defaultEventLoopGroup.any()
        let opened: PostgresConnection
        do {
            // A connection that comes after the deadline is closed at once, not left open.
            opened = try wait(
                PostgresConnection.connect(on: eventLoop, configuration: configuration, id: 1, logger: logger), doing: "connect",
                late: { Self.close($0) })
        } catch let error as PostgresVaultError {
            throw noteFailure(error)
        } catch let error as PSQLError where error.underlying.map(Self.isConnectTimeout) ?? false {
            // The TCP connect's own timeout (the same span) came first.
            throw noteFailure(PostgresVaultError.timedOut("the key vault at \(settings) did not connect within \(timeout) (timed out)"))
        } catch {
            throw noteFailure(PostgresVaultError.server("cannot connect to the key vault at \(location): \(Self.describe(error))"))
        }
        connection.withLock { $0 = opened }
        return opened
    }

    /// Runs `query` and waits for its rows, at most the timeout. A failure drops the connection
    /// (closed, and forgotten: the next call connects again), so that nothing waits on a
    /// connection that is gone or in a state nobody knows.
    @discardableResult
    private func run(_ connection: PostgresConnection, _ query: PostgresQuery) throws -> [PostgresRow] {
        let tryStarted = ContinuousClock.now
        do {
            let rows = try wait(connection.query(query, logger: logger), doing: "answer", on: connection, abandon: { Self.close(connection) }).rows
            outage.succeeded(tryStarted: tryStarted)
            return rows
        } catch {
            drop(connection)
            if let error = error as? PostgresVaultError { throw noteFailure(error) }
            throw noteFailure(PostgresVaultError.server("the key vault at \(location): \(Self.describe(error))"))
        }
    }

    /// Closes `connection` (without waiting) and forgets it, if it is the open one.
    private func drop(_ connection: PostgresConnection) {
        self.connection.withLock { open in
            if open === connection { open = nil }
        }
        Self.close(connection)
    }

    /// Closes `connection` without waiting, and keeps it until it is closed: postgres-nio
    /// asserts that a connection is closed when it is freed, and closing completes on its event
    /// loop, after the caller may have let go of it.
    private static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Counts a transient failure towards the outage under way (logged once when it begins).
    private func noteFailure(_ error: PostgresVaultError) -> PostgresVaultError {
        if error.isTransient { outage.failed(error) }
        return error
    }

    /// Waits on the calling thread (the vault's own: never one of Swift's cooperative pool) for
    /// `future`, at most the timeout. The future cascades into a promise that a task scheduled
    /// on the future's event loop fails at the deadline with ``PostgresVaultError/timedOut(_:)``,
    /// so the wait ends then even when the operation itself does not (closing a connection need
    /// not fail what is pending on it at once; a connect to a paused server waits for its
    /// handshake). At the deadline `abandon` runs (it closes the connection a query runs on);
    /// a value that arrives after it goes to `late` (a connection opened too late is closed).
    /// When `connection` (the one the operation runs on) closes first, the wait ends then with a
    /// transient failure: postgres-nio never answers a statement written after its connection
    /// closed (`ClosedConnectionWatch`).
    private func wait<T: Sendable>(
        _ future: EventLoopFuture<T>, doing what: String, on connection: PostgresConnection? = nil,
        late: @escaping @Sendable (T) -> Void = { _ in }, abandon: @escaping @Sendable () -> Void = {}
    ) throws -> T {
        let eventLoop = future.eventLoop
        let promise = eventLoop.makePromise(of: T.self)
        let decided = OnceFlag()
        // While the server is known to be out, a try is short (it is retried by the caller).
        let limit = outage.isOngoing ? min(timeout, PostgresTransience.tryLimit(within: timeout)) : timeout
        let started = ContinuousClock.now
        let place = "the key vault at \(settings)"
        let expire: @Sendable () -> Void = {
            guard decided.take() else { return }
            // The deadline may have been brought forward: the message says how long it waited.
            let waited = PostgresOutage.seconds(.now - started)
            promise.fail(PostgresVaultError.timedOut("\(place) did not \(what) within \(waited) (timed out)"))
            abandon()
        }
        // Both run on the event loop, one after the other: whichever comes first decides. The
        // watch's deadline is brought forward when another part of the process sees the server go.
        let timer = eventLoop.scheduleTask(in: TimeAmount(limit), expire)
        let ticket = DeadlineWatch.shared.add(.now + limit, owner: server) { eventLoop.execute(expire) }
        defer { DeadlineWatch.shared.remove(ticket) }
        let closeTicket = connection.flatMap { connection in
            ClosedConnectionWatch.shared.watch(connection) { _ in
                eventLoop.execute {
                    guard decided.take() else { return }
                    timer.cancel()
                    promise.fail(PostgresVaultError.server("\(place): the connection closed before the server answered"))
                }
            }
        }
        defer { if let closeTicket { ClosedConnectionWatch.shared.remove(closeTicket) } }
        future.whenComplete { result in
            timer.cancel()
            if decided.take() {
                promise.completeWith(result)
            } else if case let .success(value) = result {
                late(value)
            }
        }
        return try promise.futureResult.wait()
    }

    /// Runs `body` in a transaction on the connection: committed when it returns, rolled back
    /// when it throws. A transaction inside one (a write inside ``withLock(exclusive:_:)``) joins it.
    private func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        if transactionConnection.withLock({ $0 != nil }) { return try body(try connected()) }
        let connection = try connected()
        try run(connection, "BEGIN")
        transactionConnection.withLock { $0 = connection }
        defer { transactionConnection.withLock { $0 = nil } }
        do {
            let result = try body(connection)
            try run(connection, "COMMIT")
            return result
        } catch {
            // A failed statement dropped the connection, which ended the transaction on the
            // server; an error of the body leaves it open, to be rolled back.
            if self.connection.withLock({ $0 === connection }), !connection.isClosed { _ = try? run(connection, "ROLLBACK") }
            throw error
        }
    }

    private static func isConnectTimeout(_ error: any Error) -> Bool {
        if case .connectTimeout = error as? ChannelError { return true }
        return false
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            return error.serverInfo?[.message].map { "the server said: \($0)" } ?? "\(error.code)" + (error.underlying.map { " (\($0))" } ?? "")
        }
        if let error = error as? PostgresVaultError { return error.description }
        return String(describing: error)
    }

    /// The vault's tables (fixed text; the schema is the connection's `search_path`).
    static let tables = [
        """
        CREATE TABLE IF NOT EXISTS key_vault (
            id boolean PRIMARY KEY DEFAULT true CHECK (id),
            header bytea NOT NULL CHECK (octet_length(header) = 64))
        """,
        """
        CREATE TABLE IF NOT EXISTS key_slots (
            slot bigint PRIMARY KEY CHECK (slot >= 0),
            bytes bytea NOT NULL CHECK (octet_length(bytes) = 128))
        """
    ]
}

/// Set once, by the first that takes it.
private final class OnceFlag: Sendable {
    private let taken = Atomic(false)

    /// True for the first caller only.
    func take() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
}

/// Errors of the key vault on PostgreSQL.
package enum PostgresVaultError: Error, Sendable, Equatable, CustomStringConvertible, TransientFailure {
    /// The log's schema has no key vault (and none was to be created).
    case missing(location: String)
    /// A row does not have the layout of FORMAT.md.
    case damaged(location: String, reason: String)
    /// The server could not be reached, refused, or the connection was lost.
    case server(String)
    /// The server did not answer (connect, query, lock) within the vault's timeout.
    case timedOut(String)

    package var description: String {
        switch self {
        case let .missing(location): "there is no key vault at \(location)"
        case let .damaged(location, reason): "the key vault at \(location) is damaged: \(reason)"
        case let .server(message): message
        case let .timedOut(message): message
        }
    }

    /// A server that could not be reached or did not answer may answer later; a missing or
    /// damaged vault stays so.
    package var isTransient: Bool {
        switch self {
        case .server, .timedOut: true
        case .missing, .damaged: false
        }
    }
}
