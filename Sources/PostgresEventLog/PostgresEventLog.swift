//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LogRecordFormat
import Logging
import PostgresNIO
import Synchronization

/// The event log in PostgreSQL: the same records, positions, stream versions, claims and SHA-256
/// hash chain as the LMDB log, shared by every app server that opens the same URL.
///
/// Positions are assigned from a one-row head that every append transaction locks first, so they
/// are gap-free and in commit order; subscriptions read by position and wake on `LISTEN`
/// notifications, with polling as the fallback.
public final class PostgresEventLog: EventLogBackend, Sendable {
    /// Where the log lives, without a password.
    public let location: String
    /// The log's id (made when its schema was created).
    public let logID: UUID
    let settings: PostgresLogLocation
    /// Where the log is, with its password (for the key vault's own connection).
    package var connectionSettings: PostgresLogLocation { settings }
    let options: PostgresLogOptions
    let client: PostgresClient
    /// Where records are read and subscriptions run: the hot standby's client when the location
    /// names one, else `client`.
    let readClient: PostgresClient
    /// The hot standby the log reads from, or nil.
    let standby: PostgresLogLocation?
    /// The server appends go to and the one reads go to (``PostgresLogLocation/server``, the
    /// standby's when there is one): what their outages and deadlines are shared under.
    let server: String
    let readServer: String
    let logger = Logger(label: "PostgresEventLog")
    let notifier: CommitNotifier
    let appender: PostgresAppender
    private let tasks: Mutex<[Task<Void, Never>]>
    private let isClosed = Mutex(false)
    /// Reads that cannot reach the server (logged once per outage, with its duration when it ends).
    private let readOutage: PostgresOutage

    /// Connects, creates or migrates the schema, and starts listening for commits.
    public static func open(_ url: String, options: PostgresLogOptions = PostgresLogOptions()) async throws -> PostgresEventLog {
        try await open(PostgresLogLocation(url: url), options: options)
    }

    /// Connects, creates or migrates the schema, and starts listening for commits.
    public static func open(_ location: PostgresLogLocation, options: PostgresLogOptions = PostgresLogOptions()) async throws -> PostgresEventLog {
        let logger = Logger(label: "PostgresEventLog")
        try await checkReachable(location, options: options, logger: logger)
        // The pool retries connections on its own and logs every attempt; this log reports what
        // fails to its callers, with the server's words, so only the pool's warnings are shown.
        var poolLogger = Logger(label: "PostgresEventLog.pool")
        poolLogger.logLevel = .warning
        let client = PostgresClient(configuration: configuration(location, options: options), backgroundLogger: poolLogger)
        // Started at once (up to its first suspension), so that the pool knows it runs before the
        // first query asks it for a connection (postgres-nio warns of a lease before `run()`).
        var runners = [Task.immediate { await client.run() }]
        let readClient = location.standby.map { PostgresClient(configuration: configuration($0, options: options), backgroundLogger: poolLogger) }
        if let readClient { runners.append(Task.immediate { await readClient.run() }) }
        do {
            // Creating the tables may take longer than one operation on a busy server.
            let logID = try await withDeadline(max(options.operationTimeout, .seconds(30)), doing: "open the log at \(location)", on: client) {
                try await PostgresSchema.migrate(on: $0, location: location, logger: logger)
            }
            return try await PostgresEventLog(
                location: location, options: options, client: client, readClient: readClient, runners: runners, logID: logID)
        } catch {
            for runner in runners { runner.cancel() }
            throw PostgresFailure.wrap(error, doing: "open the log at \(location)")
        }
    }

    private init(
        location: PostgresLogLocation, options: PostgresLogOptions, client: PostgresClient, readClient: PostgresClient?,
        runners: [Task<Void, Never>], logID: UUID
    )
        async throws
    {
        self.settings = location
        self.location = location.description
        self.options = options
        self.client = client
        self.readClient = readClient ?? client
        self.standby = readClient == nil ? nil : location.standby
        self.server = location.server
        self.readServer = (standby ?? location).server
        self.logID = logID
        self.readOutage = PostgresOutage("reads of the log at \(location)", logger: logger, server: readServer)
        let logger = logger
        let reads = readClient ?? client
        let head: UInt64
        if readClient == nil {
            head = try await Self.withDeadline(options.operationTimeout, doing: "read the head of the log at \(location)", on: client) {
                try await Self.headPosition($0, logger: logger)
            }
        } else {
            // A standby may not have replayed the tables the primary has just made: subscribers
            // start from nothing and poll until it has.
            do {
                head = try await Self.withDeadline(options.operationTimeout, doing: "read the head of the standby of \(location)", on: reads) {
                    try await Self.headPosition($0, logger: logger)
                }
            } catch {
                logger.notice("the standby has no log yet; subscribers poll it from position 0", metadata: ["error": "\(error)"])
                head = 0
            }
        }
        // Reading from a standby, subscribers wait for what the standby has replayed: they poll it
        // (notifications and this node's own appends speak of the primary, which may be ahead).
        let fromStandby = readClient != nil
        let notifier = CommitNotifier(
            committed: head, pollInterval: fromStandby ? min(options.pollInterval, .milliseconds(50)) : options.pollInterval
        ) {
            do {
                return try await Self.withDeadline(options.operationTimeout, doing: "read the head of the log at \(location)", on: reads) {
                    try await Self.headPosition($0, logger: logger)
                }
            } catch {
                // Polled again at the next interval; outages are reported by the clients' own logs.
                logger.debug("cannot read the head for subscribers", metadata: ["error": "\(error)"])
                return nil
            }
        }
        self.notifier = notifier
        self.appender = PostgresAppender(client: client, location: location, clock: options.clock, logger: logger, timeout: options.operationTimeout)
        { position in if !fromStandby { notifier.publish(position) } }
        self.tasks = Mutex(runners)
        if !fromStandby {
            let listener = Task { [notifier] in
                await Self.listen(client, channel: location.channel, notifier: notifier, logger: logger, location: location)
            }
            tasks.withLock { $0.append(listener) }
        }
    }

    /// Connects once, outside the pool, and fails at once with the reason (no server on that
    /// port, a refused login, a missing database): the pool would retry until the deadline.
    private static func checkReachable(_ location: PostgresLogLocation, options: PostgresLogOptions, logger: Logger) async throws {
        let what = "connect to the log at \(location)"
        // Part of opening, which waits at least 30 s (a refused connection fails at once anyway).
        let timeout = max(options.operationTimeout, .seconds(30))
        do {
            let configuration = try location.connectionConfiguration(
                applicationName: "spezi-account-store", durable: options.durability == .durable, connectTimeout: timeout)
            // The body closes what it opened: when the deadline answers first, a connection that
            // comes later is closed by the body, not dropped open.
            try await withDeadline(timeout, doing: what) {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                try await connection.close()
            }
        } catch {
            throw PostgresFailure.wrap(error, doing: what)
        }
    }

    // MARK: Appending

    /// Appends `events` to the stream (see `EventLogBackend`); returns after the commit.
    public func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>
    ) async throws -> AppendResult {
        try await appendChecked(
            CheckedAppend(
                events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases, timestamps: nil,
                maxPayload: options.maxPayloadBytes))
    }

    /// Appends events that keep their own timestamps (imports, moves between backends).
    public func appendImported(
        _ events: [(event: ProposedEvent, timestamp: Date)], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>,
        releases: Set<String>
    ) async throws -> AppendResult {
        try await appendChecked(
            CheckedAppend(
                events.map(\.event), to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases,
                timestamps: events.map { CheckedAppend.micros($0.timestamp) }, maxPayload: options.maxPayloadBytes))
    }

    /// Queues appends to several streams together: they share transactions, each checked on its own.
    public func appendBatch(_ appends: [StreamAppend]) async -> [Result<AppendResult, any Error>] {
        var outcomes = [Result<AppendResult, any Error>?](repeating: nil, count: appends.count)
        var checked: [CheckedAppend] = []
        var queuedIndexes: [Int] = []
        for (index, append) in appends.enumerated() {
            do {
                checked.append(
                    try CheckedAppend(
                        append.events, to: append.streamID, expectedVersion: append.expectedVersion, claims: append.claims,
                        releases: append.releases, timestamps: append.timestamps?.map(CheckedAppend.micros), maxPayload: options.maxPayloadBytes))
                queuedIndexes.append(index)
            } catch {
                outcomes[index] = .failure(error)
            }
        }
        do {
            try checkOpen()
            for (index, outcome) in zip(queuedIndexes, await appender.appendAll(checked)) { outcomes[index] = outcome }
        } catch {
            for index in queuedIndexes { outcomes[index] = .failure(error) }
        }
        return outcomes.map { $0! }
    }

    /// How the append groups committed so far were decided (one round trip, corrected, locked).
    package var appendPaths: AppendPaths { appender.paths.withLock { $0 } }

    private func appendChecked(_ append: CheckedAppend) async throws -> AppendResult {
        try checkOpen()
        return try await appender.append(append)
    }

    // MARK: Reading

    /// The stream holding a claim, or nil.
    public func claimOwner(_ claim: String) async throws -> String? {
        try await query("read a claim") { connection, logger in
            let rows = try await connection.query("SELECT stream_id FROM log_claims WHERE claim = \(claim)", logger: logger)
            for try await owner in rows.decode(String.self) { return owner }
            return nil
        }
    }

    /// The last position; 0 for an empty log.
    public func lastPosition() async throws -> UInt64 {
        try await query("read the head") { connection, logger in try await Self.headPosition(connection, logger: logger) }
    }

    /// The record at `position`, or nil.
    public func record(at position: UInt64) async throws -> RecordedEvent? {
        try await read(from: position, direction: .forward, limit: 1).first { $0.position == position }
    }

    /// Up to `limit` records from `position`, forward or backward.
    public func read(from position: UInt64, direction: ReadDirection, limit: Int) async throws -> [RecordedEvent] {
        let limit = Int64(max(0, min(limit, 100_000)))
        let from = Int64(clamping: position)
        let location = location
        return try await query("read records", fromStandby: true) { connection, logger in
            let rows =
                direction == .forward
                ? try await connection.query(
                    "SELECT \(unescaped: RecordColumns.list) FROM log_records WHERE position >= \(from) ORDER BY position LIMIT \(limit)",
                    logger: logger)
                : try await connection.query(
                    "SELECT \(unescaped: RecordColumns.list) FROM log_records WHERE position <= \(from) ORDER BY position DESC LIMIT \(limit)",
                    logger: logger)
            return try await RecordColumns.decode(rows, location: location)
        }
    }

    /// Up to `limit` events of one stream from stream version `version` on.
    public func readStream(_ streamID: String, from version: UInt64, limit: Int) async throws -> [RecordedEvent] {
        let limit = Int64(max(0, min(limit, Int(Int64.max))))
        let location = location
        return try await query("read a stream") { connection, logger in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: RecordColumns.list) FROM log_records WHERE stream_id = \(streamID) AND stream_version >= \(Int64(clamping: version))
                ORDER BY stream_version LIMIT \(limit)
                """, logger: logger)
            return try await RecordColumns.decode(rows, location: location)
        }
    }

    /// The stream's version, or nil when it has no events.
    public func streamVersion(_ streamID: String) async throws -> UInt64? {
        try await query("read a stream version") { connection, logger in
            let rows = try await connection.query("SELECT max(stream_version) FROM log_records WHERE stream_id = \(streamID)", logger: logger)
            for try await version in rows.decode(Int64?.self) { return version.map(UInt64.init) }
            return nil
        }
    }

    /// Catch-up, then live batches.
    public func subscribeBatches(after position: UInt64, stream streamID: String?, batchSize: Int) -> RecordBatches {
        RecordBatches { [self] in
            let cursor = PostgresSubscriptionCursor(log: self, position: position, streamID: streamID, batchSize: max(1, batchSize))
            return { try await cursor.next() }
        }
    }

    /// Returns once a record past `position` is committed (or the log closed).
    public func waitForCommit(beyond position: UInt64) async {
        await notifier.wait(beyond: position)
    }

    /// Counts and sizes (`fileBytes`: the records table with its indexes).
    public func statistics() async throws -> LogStatistics {
        try await query("read statistics") { connection, logger in
            let rows = try await connection.query(
                "SELECT (SELECT count(*) FROM log_records), (SELECT position FROM log_head), pg_total_relation_size('log_records'::regclass)",
                logger: logger)
            for try await (count, last, bytes) in rows.decode((Int64, Int64, Int64).self) {
                return LogStatistics(records: Int(count), lastPosition: UInt64(last), fileBytes: Int(bytes), mapBytes: Int(bytes))
            }
            throw PostgresLogError.server("no statistics")
        }
    }

    /// Nothing to flush: a durable commit is on the server's disk when it is acknowledged.
    public func sync() async throws {
        try checkOpen()
    }

    /// Finishes queued appends, stops listening and closes the connections (waiting for them at
    /// most the operation timeout, and at least 5 s; a warning is logged when they did not end in
    /// that time). Idempotent.
    public func close() async {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        appender.close()
        await appender.finishQueued()
        notifier.close()
        let running = tasks.withLock { $0 }
        for task in running { task.cancel() }
        // The connection pool ends once its connections are back, and the listener once its
        // connection's notifications stop. Closing waits for them, but not without end: a
        // connection left hanging by a server that went away must not hang the caller's shutdown.
        let limit = max(options.operationTimeout, .seconds(5))
        let location = location
        do {
            try await Self.withDeadline(limit, doing: "close the connections to the log at \(location)", cancellable: false) {
                for task in running { await task.value }
            }
        } catch {
            logger.warning(
                "the log's connections did not close in time; they end in the background",
                metadata: ["log": "\(location)", "error": "\(error)"])
        }
    }

    /// A value stored with the log under `name`, or nil.
    public func metadata(_ name: String) async throws -> [UInt8]? {
        try await query("read metadata") { connection, logger in
            let rows = try await connection.query("SELECT value FROM log_metadata WHERE name = \(name)", logger: logger)
            for try await value in rows.decode(ByteBuffer.self) { return Array(buffer: value) }
            return nil
        }
    }

    /// Stores `value` under `name` unless one is there; returns the stored value.
    public func setMetadataIfAbsent(_ name: String, _ value: [UInt8]) async throws -> [UInt8] {
        try await query("write metadata") { connection, logger in
            try await connection.query(
                "INSERT INTO log_metadata (name, value) VALUES (\(name), \(ByteBuffer(bytes: value))) ON CONFLICT (name) DO NOTHING", logger: logger)
            let rows = try await connection.query("SELECT value FROM log_metadata WHERE name = \(name)", logger: logger)
            for try await stored in rows.decode(ByteBuffer.self) { return Array(buffer: stored) }
            throw PostgresLogError.server("metadata \(name) vanished")
        }
    }

    // MARK: Helpers

    func checkOpen() throws {
        if isClosed.withLock({ $0 }) { throw EventLogError.closed(path: location) }
    }

    /// Runs one read against the server with the log's timeout, turning failures into log errors.
    /// With `fromStandby`, on the hot standby when the log reads from one. A transient failure (a
    /// lost connection, a restarting server, a try without an answer) is tried again with capped
    /// exponential backoff and jitter within the timeout, each try within
    /// ``PostgresTransience/tryLimit(within:)`` (reads change nothing, so a try may be repeated).
    func query<T: Sendable>(
        _ what: String, fromStandby: Bool = false, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        try checkOpen()
        let (serving, serverKey) = fromStandby ? (readClient, readServer) : (client, server)
        let place = fromStandby ? standby.map { "the standby \($0.host):\($0.port) of " } ?? "" : ""
        let location = location
        let limit = options.operationTimeout
        let started = ContinuousClock.now
        var attempt = 0
        while true {
            attempt += 1
            let tryStarted = ContinuousClock.now
            let remaining = max(limit - (ContinuousClock.now - started), .milliseconds(100))
            do {
                let value = try await Self.withDeadline(
                    readOutage.isOngoing ? min(remaining, PostgresTransience.tryLimit(within: limit, attempt: attempt)) : remaining,
                    doing: "\(what) of \(place)the log at \(location)", server: serverKey, on: serving
                ) { [logger] in
                    try await body($0, logger)
                }
                readOutage.succeeded(tryStarted: tryStarted)
                return value
            } catch {
                let failure = PostgresFailure.wrap(error, doing: "\(what) of \(place)the log at \(location)")
                let wait = PostgresTransience.backoff(attempt: attempt)
                guard PostgresTransience.isTransient(failure), !Task.isCancelled, isClosed.withLock({ !$0 }),
                    ContinuousClock.now - started + wait < limit
                else { throw failure }
                readOutage.failed(failure)
                try await Task.sleep(for: wait)
            }
        }
    }
}
