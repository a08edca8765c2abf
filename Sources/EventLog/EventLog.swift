//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

public import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat
import Logging
import Synchronization

/// Options for opening an ``EventLog``.
public struct EventLogOptions: Sendable {
    /// `.durable` (default): an acknowledged append has been flushed to disk. `.relaxed`: no flush;
    /// a crashed process loses nothing, an OS crash or power loss may lose the latest appends (and,
    /// on file systems that reorder writes, damage the file: `verify` tells).
    /// `.lastCommitMayRollBack`: an OS crash may undo the last commit only.
    public var sync: Durability = .durable
    /// The map size to start with; it grows by itself when full.
    public var initialMapSize: Int = 1 << 30
    /// The largest payload accepted.
    public var maxPayloadBytes: Int = 16 << 20
    /// The most events the writer puts into one transaction (group commit).
    public var maxBatchEvents: Int = 10_000
    /// The most bytes the writer puts into one transaction (group commit).
    public var maxBatchBytes: Int = 64 << 20
    /// How many records a commit may leave out of the `streams` and `event-ids` indexes before
    /// one commit writes them all (FORMAT.md, "Deferred indexing"). A commit then writes its
    /// records, not a page of each index per stream and event id it touches, which is most of the
    /// disk writes of a durable commit. Lookups find the newer entries in memory; the entries are
    /// derived from the records, so a crash loses nothing. 0 indexes every commit. After a commit
    /// of 256 events or more (an import, a bulk append) the tail may grow to
    /// ``bulkIndexTailLimit``.
    public var indexTailLimit: Int = 2_048
    /// How many records commits of 256 events or more (imports, bulk appends) may leave out of the
    /// indexes, if more than 32 times ``indexTailLimit``. Most of an import's time goes into
    /// writing index entries among those already there, so fewer, larger flushes make it faster
    /// (`hot-paths import` of 1 M events, the closing flush included: 160–167 k events/s with
    /// 65,536, 188–189 k with 262,144, 199–204 k with 524,288, 204–216 k with one flush at the
    /// end), at about 250 bytes of memory per record in the tail while it lasts (the import of
    /// `peer-compare` peaked at 113 MiB of heap with 65,536, 189 MiB with 262,144 and 244 MiB with
    /// 524,288). A writer left idle for ``idleIndexFlushDelay`` after bulk commits writes the tail
    /// then, so that the next small commit does not carry it.
    public var bulkIndexTailLimit: Int = 262_144
    /// How long the writer waits, idle, after bulk commits before it writes their tail into the
    /// indexes on its own.
    public var idleIndexFlushDelay: Duration = .milliseconds(50)
    /// How often waiting subscribers look for appends made by other processes.
    public var pollInterval: Duration = .milliseconds(250)
    /// The clock that timestamps records (inject a fixed one in tests).
    public var clock: @Sendable () -> Date = { Date() }
    /// Open for reading only.
    public var readOnly = false

    /// Creates the default value.
    public init() {}
}

/// A durable, append-only, hash-chained log of events in streams, kept in LMDB.
///
/// ```swift
/// let log = try EventLog(path: "/var/lib/app/log")
/// let result = try await log.append([ProposedEvent(type: "greeted", payload: Data("hi".utf8))],
///                                   to: "stream-1", expectedVersion: .noStream)
/// for try await event in log.subscribe(after: 0) { print(event.position, event.type) }
/// ```
public final class EventLog: Sendable {
    /// The format version this build writes (FORMAT.md). It also opens logs of format 1 (which
    /// have no unindexed tail); opening one for writing upgrades it in place.
    public static let formatVersion: UInt32 = 2

    /// The log's directory.
    public let path: String
    /// The options it was opened with.
    public let options: EventLogOptions
    /// A random id given to the log when it was created.
    public let logID: UUID
    /// Reader slots left by dead processes that were cleared when the log was opened. (When no
    /// other process has the log open, LMDB resets its reader table at open anyway.)
    public var staleReadersCleared: Int { environment.staleReadersCleared }

    /// Clears reader slots of processes that died inside a read transaction (they would keep old
    /// pages from reuse and make the file grow); returns how many were cleared.
    ///
    /// - Returns: the number of reader slots cleared.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when LMDB cannot check
    ///   its reader table.
    public func clearStaleReaders() throws -> Int {
        do { return try environment.clearStaleReaders() } catch { throw EventLogError.wrapping(error, path: path) }
    }

    let environment: Environment
    let databases: LogDatabases
    let notifier: CommitNotifier
    let tail: IndexTail
    private let writer: AppendWriter?
    private let isClosed = Mutex(false)

    /// Opens the log in the directory at `path`, creating it when it does not exist.
    ///
    /// - Parameters:
    ///   - path: the log's folder.
    ///   - options: durability, limits, the clock, and whether to open read-only.
    /// - Throws: `EventLogError.notAnEventLog` when the folder holds something else (or, read-only,
    ///   no log at all), `.unsupportedFormatVersion` for a log of a newer format, `.diskFull` or
    ///   `.storage` when the files cannot be opened or created.
    public init(path: String, options: EventLogOptions = EventLogOptions()) throws {
        var environmentOptions = EnvironmentOptions()
        environmentOptions.sync = SyncMode(options.sync)
        environmentOptions.initialMapSize = options.initialMapSize
        environmentOptions.readOnly = options.readOnly
        environmentOptions.maxDatabases = 8
        let environment: Environment
        do {
            environment = try Environment(path: path, options: environmentOptions)
        } catch let error as LMDBError {
            if error.code == ENOENT { throw EventLogError.notAnEventLog(path: path, reason: "there is no log there") }
            if error.code == EBUSY { throw EventLogError.storage(error) }
            throw EventLogError.wrapping(error, path: path)
        }
        do {
            (databases, logID) = try Self.openDatabases(environment, readOnly: options.readOnly)
        } catch {
            environment.close()
            throw EventLogError.wrapping(error, path: environment.path)
        }
        self.environment = environment
        self.path = environment.path
        self.options = options
        let databases = databases
        let lastPosition: UInt64
        do {
            lastPosition = try environment.read { txn in try databases.lastPosition(txn) }
        } catch {
            environment.close()
            throw EventLogError.wrapping(error, path: environment.path)
        }
        let notifier = CommitNotifier(committed: lastPosition, pollInterval: options.pollInterval) {
            do {
                return try environment.read { txn in try databases.lastPosition(txn) }
            } catch {
                // Polled again at the next interval; appends of this process still notify.
                EventLog.pollLogger.debug("cannot read the head for subscribers", metadata: ["error": "\(error)", "path": "\(environment.path)"])
                return nil
            }
        }
        self.notifier = notifier
        let tail = IndexTail(databases: databases, path: environment.path)
        self.tail = tail
        writer =
            options.readOnly
            ? nil
            : AppendWriter(
                environment: environment, databases: databases, tail: tail, clock: options.clock,
                maxBatchEvents: options.maxBatchEvents, maxBatchBytes: options.maxBatchBytes,
                indexTailLimit: options.indexTailLimit, bulkIndexTailLimit: options.bulkIndexTailLimit,
                idleIndexFlushDelay: options.idleIndexFlushDelay,
                commitsInline: options.sync == .relaxed, onCommit: { notifier.publish($0) }
            )
    }

    deinit {
        close()
    }

    private static func openDatabases(_ environment: Environment, readOnly: Bool) throws -> (LogDatabases, UUID) {
        let names = try environment.databaseNames()
        if !names.isEmpty && !names.contains(LogDatabases.names.meta) {
            throw EventLogError.notAnEventLog(
                path: environment.path, reason: "it holds LMDB databases (\(names.joined(separator: ", "))) but no \"meta\" database")
        }
        if names.isEmpty {
            if readOnly { throw EventLogError.notAnEventLog(path: environment.path, reason: "the log is empty and was never initialized") }
            try environment.write { txn in
                let meta = try txn.openDatabase(LogDatabases.names.meta, create: true)
                if try txn.get(meta, key: Array("format-version".utf8)) == nil {
                    try txn.put(
                        meta, key: Array("format-version".utf8), value: withUnsafeBytes(of: formatVersion.bigEndian) { Array($0) })
                    try txn.put(meta, key: Array("log-id".utf8), value: LogDatabases.eventIDKey(UUID()))
                    let created = Int64(Date().timeIntervalSince1970 * 1_000_000)
                    try txn.put(meta, key: Array("created".utf8), value: BigEndian.bytes(UInt64(bitPattern: created)))
                    try txn.put(meta, key: LogDatabases.indexedThroughKey, value: BigEndian.bytes(0))
                }
            }
        }
        let databases = try LogDatabases(environment: environment, create: !readOnly)
        let (_, id, found) = try environment.read { txn in
            guard let version = try txn.get(databases.meta, key: Array("format-version".utf8)) else {
                throw EventLogError.notAnEventLog(path: environment.path, reason: "its meta database has no format version")
            }
            guard version.count == 4 else {
                throw EventLogError.notAnEventLog(path: environment.path, reason: "its format version has \(version.count) bytes, not 4")
            }
            let found = version.withUnsafeBytes { BigEndian.uint32($0) }
            guard found == formatVersion || found == 1 else {
                throw EventLogError.unsupportedFormatVersion(found: found, supported: formatVersion, path: environment.path)
            }
            let idBytes = try txn.get(databases.meta, key: Array("log-id".utf8)) ?? []
            let id = idBytes.withUnsafeBytes { bytes -> UUID in
                var reader = ByteReader(buffer: bytes, offset: 0)
                return reader.uuid() ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
            }
            return (databases, id, found)
        }
        if found == 1 && !readOnly {
            // Format 1 indexed every commit: its indexes hold every record.
            try environment.write { txn in
                // Another process may have upgraded it (and appended) since the read above.
                guard try txn.get(databases.meta, key: Array("format-version".utf8)) == withUnsafeBytes(of: UInt32(1).bigEndian, { Array($0) })
                else { return }
                try databases.setIndexedThrough(txn, try databases.lastPosition(txn))
                try txn.put(databases.meta, key: Array("format-version".utf8), value: withUnsafeBytes(of: formatVersion.bigEndian) { Array($0) })
            }
        }
        return (databases, id)
    }

    /// Finishes queued appends, ends subscriptions and closes the files. Idempotent. Blocks the
    /// calling thread while the writer finishes its queue: from a task, use the `async` overload.
    public func close() {
        guard markClosed() else { return }
        writer?.stop()
        notifier.close()
        environment.close()
    }

    /// Finishes queued appends, ends subscriptions and closes the files, with the calling task
    /// suspended (not its thread) while the writer finishes its queue. Idempotent.
    public func close() async {
        guard markClosed() else { return }
        await writer?.stopAsync()
        notifier.close()
        environment.close()
    }

    /// True for the first caller only.
    private func markClosed() -> Bool {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        return !wasClosed
    }

    // MARK: Appending

    /// Appends `events` to the stream in one transaction, after checking `expectedVersion`.
    ///
    /// Returns when the events are committed (and, in the durable mode, on disk). Appending events
    /// whose ids are all in the log already writes nothing and returns their original positions.
    /// The write transaction and its `fdatasync` run on the log's writer thread while the caller's
    /// task is suspended, so no thread of Swift's cooperative pool waits for the disk; appends that
    /// arrive during a commit are grouped into the next one (group commit). On a relaxed log, an
    /// append that finds the writer idle (and no other process using the log) commits on the
    /// caller's thread instead: without a flush, that is quicker than two thread hops.
    ///
    /// `claims` are unique keys (a user id, say) that the stream takes in the same transaction: if
    /// another stream holds one, the append throws `EventLogError.claimTaken` and writes
    /// nothing. `releases` are keys the stream gives up. ``claimOwner(_:)`` looks them up.
    ///
    /// - Parameters:
    ///   - events: the events, in order (at least one).
    ///   - streamID: the stream they go to (1–400 bytes of UTF-8, without NUL).
    ///   - expectedVersion: the check the stream must pass first (default: none).
    ///   - claims: unique keys the stream takes.
    ///   - releases: keys the stream gives up.
    /// - Returns: the events' positions, the stream's new version, and whether the append was a retry
    ///   of one already in the log.
    /// - Throws: `EventLogError.wrongExpectedVersion` when the stream fails `expectedVersion`,
    ///   `.claimTaken` when another stream holds a claim, `.duplicateEventID` when some but not all of
    ///   the ids are in the log already, `.invalidStreamID` or `.invalidEvent` for an append that
    ///   breaks a limit, `.closed` after `close()`, `.diskFull` or `.storage` when the commit
    ///   fails (also for a log opened read-only). Nothing is written then.
    public func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion = .any,
        claims: Set<String> = [], releases: Set<String> = []
    ) async throws -> AppendResult {
        try await append(events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases, timestamps: nil)
    }

    func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>,
        timestamps: [Int64]?
    ) async throws -> AppendResult {
        let request = try makeRequest(
            events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases, timestamps: timestamps)
        guard let writer else { throw readOnlyError("append to") }
        return try await writer.append(request)
    }

    /// Appends to several streams with one suspension: the appends are queued together, in this
    /// order, share commits as far as the batch limits allow, and each is checked on its own (one
    /// that fails writes nothing and holds back none of the others). Returns each one's outcome, in
    /// order. Imports and moves between backends use it.
    ///
    /// The appends are checked and encoded 64 at a time, each part queued as soon as it is ready:
    /// the writer applies the first parts while the caller encodes the rest, and commits them
    /// together (within the batch limits).
    ///
    /// - Parameter appends: one append per element; a stream may appear more than once.
    /// - Returns: each append's outcome, in the order given: its `AppendResult`, or the error that
    ///   kept it out of the log.
    public func appendBatch(_ appends: [StreamAppend]) async -> [Result<AppendResult, any Error>] {
        guard !appends.isEmpty else { return [] }
        guard let writer else {
            let error = readOnlyError("append to")
            return appends.map { _ in .failure(error) }
        }
        return await withCheckedContinuation { continuation in
            let outcomes = AppendOutcomes(count: appends.count, continuation: continuation)
            for start in stride(from: 0, to: appends.count, by: Self.preparedPerQueueing) {
                var requests: [AppendRequest] = []
                var queuedIndexes: [Int] = []
                for index in start..<min(start + Self.preparedPerQueueing, appends.count) {
                    let append = appends[index]
                    do {
                        requests.append(
                            try makeRequest(
                                append.events, to: append.streamID, expectedVersion: append.expectedVersion, claims: append.claims,
                                releases: append.releases, timestamps: append.timestamps?.map(CheckedAppend.micros)))
                        queuedIndexes.append(index)
                    } catch {
                        outcomes.set(index, .failure(error))
                    }
                }
                guard !requests.isEmpty else { continue }
                // The writer waits for the next part rather than commit the batch in pieces.
                requests[requests.count - 1].moreFollows = start + Self.preparedPerQueueing < appends.count
                let indexes = queuedIndexes
                writer.enqueue(requests) { offset, outcome in outcomes.set(indexes[offset], outcome) }
            }
        }
    }

    /// How many appends of a batch are checked and encoded before they are queued.
    static let preparedPerQueueing = 64
    /// Where a failed poll of the head for subscribers is reported.
    static let pollLogger = Logger(label: "EventLog.subscriptions")

    /// The error for a write to a log opened read-only.
    func readOnlyError(_ operation: String) -> EventLogError {
        EventLogError.storage(LMDBError(code: EACCES, operation: "\(operation) a log opened read-only", path: path))
    }

    /// Checks an append and sizes its records.
    private func makeRequest(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>,
        timestamps: [Int64]?
    ) throws -> AppendRequest {
        let checked = try CheckedAppend(
            events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases, timestamps: timestamps,
            maxPayload: options.maxPayloadBytes)
        return AppendRequest(
            streamID: streamID, expected: expectedVersion, events: events,
            templates: checked.templates(), sizes: checked.sizes, claims: claims, releases: releases, timestamps: timestamps)
    }

    /// Appends one event.
    ///
    /// - Parameters:
    ///   - event: the event.
    ///   - streamID: the stream it goes to.
    ///   - expectedVersion: the check the stream must pass first (default: none).
    ///   - claims: unique keys the stream takes.
    ///   - releases: keys the stream gives up.
    /// - Returns: the event's position, the stream's new version, and whether the append was a retry.
    /// - Throws: what `append(_:to:expectedVersion:claims:releases:)` throws.
    public func append(
        _ event: ProposedEvent, to streamID: String, expectedVersion: ExpectedVersion = .any,
        claims: Set<String> = [], releases: Set<String> = []
    ) async throws -> AppendResult {
        try await append([event], to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases)
    }

    /// The stream that holds a claimed key, or nil.
    ///
    /// - Parameter claim: the unique key.
    /// - Returns: the id of the stream that holds it, or nil when no stream does.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func claimOwner(_ claim: String) throws -> String? {
        try reading { txn in
            try txn.get(databases.claims, key: Array(claim.utf8)).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
