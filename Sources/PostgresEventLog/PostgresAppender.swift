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

/// Group commit for this process's appends: the appends that arrive while a transaction runs go
/// into the next one. Every transaction first locks the log's one-row head (`SELECT … FOR
/// UPDATE`), which serializes the writers of every server: positions are taken from the head, so
/// they are gap-free and in commit order (a rolled-back transaction leaves the head as it was).
final class PostgresAppender: Sendable {
    private struct Queued {
        let append: CheckedAppend
        let complete: @Sendable (Result<AppendResult, any Error>) -> Void
    }

    private struct Queue {
        var pending: [Queued] = []
        var draining = false
        var closed = false
        /// Appends queued since the last transaction's appenders were answered.
        var returned = 0
    }

    private let queue = Mutex(Queue())
    private let client: PostgresClient
    private let location: PostgresLogLocation
    private let clock: @Sendable () -> Date
    private let logger: Logger
    private let onCommit: @Sendable (UInt64) -> Void
    private let timeout: Duration
    /// The most events one transaction takes.
    private let maxGroupEvents = 4_096

    init(
        client: PostgresClient, location: PostgresLogLocation, clock: @escaping @Sendable () -> Date, logger: Logger, timeout: Duration,
        onCommit: @escaping @Sendable (UInt64) -> Void
    ) {
        self.timeout = timeout
        self.client = client
        self.location = location
        self.clock = clock
        self.logger = logger
        self.onCommit = onCommit
    }

    /// Queues the append and returns after the transaction that holds it committed.
    func append(_ append: CheckedAppend) async throws -> AppendResult {
        try await withCheckedThrowingContinuation { continuation in
            enqueue([append]) { _, outcome in continuation.resume(with: outcome) }
        }
    }

    /// Queues the appends together, in this order (they share transactions as far as the group
    /// limit allows, each checked on its own), and returns each one's outcome in the same order.
    func appendAll(_ appends: [CheckedAppend]) async -> [Result<AppendResult, any Error>] {
        guard !appends.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let collector = AppendOutcomes(count: appends.count, continuation: continuation)
            enqueue(appends) { index, outcome in collector.set(index, outcome) }
        }
    }

    private func enqueue(_ appends: [CheckedAppend], complete: @escaping @Sendable (Int, Result<AppendResult, any Error>) -> Void) {
        let start = queue.withLock { queue -> Bool? in
            if queue.closed { return nil }
            for (index, append) in appends.enumerated() {
                queue.pending.append(Queued(append: append) { complete(index, $0) })
            }
            queue.returned += appends.count
            defer { queue.draining = true }
            return !queue.draining
        }
        switch start {
        case nil:
            for index in appends.indices { complete(index, .failure(EventLogError.closed(path: location.description))) }
        case true?: Task { await drain() }
        case false?: break
        }
    }

    /// Refuses new appends; queued ones still commit.
    func close() {
        queue.withLock { $0.closed = true }
    }

    /// Waits until every queued append has been answered.
    func finishQueued() async {
        while queue.withLock({ $0.draining }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func drain() async {
        var answered = 0
        var lastTransaction: Duration = .zero
        while true {
            // The appenders the last transaction answered usually append again at once: waiting a
            // little for them (at most half a transaction) lets them share the next one rather
            // than trickle into transactions of one or two.
            if answered > 1 { await waitForReturns(answered, within: min(lastTransaction / 2, .milliseconds(2))) }
            let group = queue.withLock { queue -> [Queued] in
                var taken: [Queued] = []
                var events = 0
                while let next = queue.pending.first, taken.isEmpty || events + next.append.events.count <= maxGroupEvents {
                    taken.append(queue.pending.removeFirst())
                    events += next.append.events.count
                }
                if taken.isEmpty { queue.draining = false }
                return taken
            }
            if group.isEmpty { return }
            let started = ContinuousClock.now
            let outcomes = await commit(group.map(\.append))
            lastTransaction = ContinuousClock.now - started
            answered = group.count
            queue.withLock { $0.returned = 0 }
            for (queued, outcome) in zip(group, outcomes) { queued.complete(outcome) }
        }
    }

    /// Returns once `count` appends were queued since the last answers, or after `limit`.
    private func waitForReturns(_ count: Int, within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if queue.withLock({ $0.returned >= count || $0.closed }) { return }
            try? await Task.sleep(for: .microseconds(100))
        }
    }

    /// One transaction for a group; each append is checked on its own.
    private func commit(_ appends: [CheckedAppend]) async -> [Result<AppendResult, any Error>] {
        do {
            let (client, logger, now, channel) = (client, logger, CheckedAppend.micros(clock()), location.channel)
            let (outcomes, head) = try await PostgresEventLog.withDeadline(timeout, doing: "append to the log at \(location)") {
                try await client.withTransaction(logger: logger) { connection in
                    try await GroupTransaction(connection: connection, logger: logger, now: now).run(appends, channel: channel)
                }
            }
            if let head { onCommit(head) }
            return outcomes
        } catch {
            let failure = PostgresFailure.wrap(error, doing: "append to the log at \(location)")
            logger.error("append transaction failed", metadata: ["error": "\(failure)", "log": "\(location)"])
            return appends.map { _ in .failure(failure) }
        }
    }
}

/// The work of one append transaction, on its connection.
private struct GroupTransaction {
    let connection: PostgresConnection
    let logger: Logger
    let now: Int64

    /// Decides every append against the head, the stored ids, versions and claims, then writes
    /// the records, the claims and the new head. Returns each outcome and the new head position
    /// (nil when nothing was written).
    func run(_ appends: [CheckedAppend], channel: String) async throws -> ([Result<AppendResult, any Error>], UInt64?) {
        var (head, known, versions, owners) = try await prepare(
            ids: appends.flatMap { $0.events.map(\.eventID) }, streams: Set(appends.map(\.streamID)),
            claims: appends.reduce(into: Set<String>()) { $0.formUnion($1.claims.union($1.releases)) })
        let startPosition = head.position
        var changedClaims: Set<String> = []
        var rows = RecordRows()
        var outcomes: [Result<AppendResult, any Error>] = []
        for append in appends {
            outcomes.append(
                Result {
                    try decide(append, head: &head, known: &known, versions: &versions, owners: &owners, changedClaims: &changedClaims, rows: &rows)
                })
        }
        guard head.position > startPosition else { return (outcomes, nil) }
        try await write(rows, claims: changedClaims, owners: owners, head: head, channel: channel)
        return (outcomes, head.position)
    }

    struct Head {
        var position: UInt64
        var hash: ChainHash
        var timestamp: Int64
    }

    private func decide(
        _ append: CheckedAppend, head: inout Head, known: inout [UUID: (position: UInt64, version: UInt64)], versions: inout [String: UInt64],
        owners: inout [String: String], changedClaims: inout Set<String>, rows: inout RecordRows
    ) throws -> AppendResult {
        // An event id already in the log makes this a retry: answer with the original positions.
        let found = append.events.compactMap { known[$0.eventID] }
        if let first = found.first {
            let positions = found.map(\.position)
            guard found.count == append.events.count, let last = positions.last, positions == Array(first.position...last) else {
                let index = append.events.firstIndex { known[$0.eventID] != nil }!
                throw EventLogError.duplicateEventID(append.events[index].eventID, existingPosition: first.position)
            }
            return AppendResult(positions: first.position...last, streamVersion: found.last!.version, wasDuplicate: true)
        }
        let current = versions[append.streamID] ?? 0
        switch append.expected {
        case .any: break
        case .noStream:
            guard current == 0 else { throw EventLogError.wrongExpectedVersion(stream: append.streamID, expected: append.expected, actual: current) }
        case let .exact(expected):
            guard current == expected else {
                throw EventLogError.wrongExpectedVersion(stream: append.streamID, expected: append.expected, actual: current == 0 ? nil : current)
            }
        }
        for claim in append.claims.sorted() {
            if let owner = owners[claim], owner != append.streamID { throw EventLogError.claimTaken(claim, owner: owner) }
        }
        for release in append.releases where !append.claims.contains(release) && owners[release] == append.streamID {
            owners[release] = nil
            changedClaims.insert(release)
        }
        for claim in append.claims where owners[claim] != append.streamID {
            owners[claim] = append.streamID
            changedClaims.insert(claim)
        }
        let first = head.position + 1
        var version = current
        for (index, event) in append.events.enumerated() {
            // Never earlier than the record before it, so times never decrease along positions.
            let timestamp = max(append.timestamps?[index] ?? now, head.timestamp)
            version += 1
            let position = head.position + 1
            let encoded = RecordFormat.encode(
                position: position, streamVersion: version, timestampMicros: timestamp, streamID: append.streamID, event: event,
                pairs: append.metadataPairs[index], size: append.sizes[index], previous: head.hash)
            rows.add(
                position: position, streamID: append.streamID, version: version, timestamp: timestamp, event: event,
                metadata: RecordFormat.encodeMetadata(append.metadataPairs[index]), crc: encoded.crc, hash: encoded.hash)
            known[event.eventID] = (position, version)
            head = Head(position: position, hash: encoded.hash, timestamp: timestamp)
        }
        versions[append.streamID] = version
        return AppendResult(positions: first...head.position, streamVersion: version, wasDuplicate: false)
    }

    /// Locks the head, then reads what the appends are checked against (stored event ids, stream
    /// versions, claim owners): one round trip, `log_prepare` (PostgresSchema), whose statements
    /// each see every append committed before the lock was granted.
    private func prepare(
        ids: [UUID], streams: Set<String>, claims: Set<String>
    ) async throws -> (
        Head, [UUID: (position: UInt64, version: UInt64)], [String: UInt64], [String: String]
    ) {
        let rows = try await connection.query(
            "SELECT o_kind, o_pos, o_hash, o_num, o_id, o_name, o_owner FROM log_prepare(\(ids), \(Array(streams)), \(Array(claims)))",
            logger: logger)
        var head: Head?
        var known: [UUID: (position: UInt64, version: UInt64)] = [:]
        var versions: [String: UInt64] = [:]
        var owners: [String: String] = [:]
        for try await (kind, position, hash, number, id, name, owner) in rows.decode(
            (Int32, Int64?, ByteBuffer?, Int64?, UUID?, String?, String?).self)
        {
            switch kind {
            case 0:
                guard let position, let hash, let number else { throw PostgresLogError.server("the log's head row is incomplete") }
                head = Head(position: UInt64(position), hash: ChainHash(bytes: Array(buffer: hash)), timestamp: number)
            case 1:
                if let id, let position, let number { known[id] = (UInt64(position), UInt64(number)) }
            case 2:
                if let name, let number { versions[name] = UInt64(number) }
            default:
                if let name, let owner { owners[name] = owner }
            }
        }
        guard let head else { throw PostgresLogError.server("the log's head row is missing") }
        return (head, known, versions, owners)
    }

    /// Inserts the records, changes the claims, moves the head and announces it: one statement.
    private func write(_ rows: RecordRows, claims changed: Set<String>, owners: [String: String], head: Head, channel: String) async throws {
        let released = changed.filter { owners[$0] == nil }.sorted()
        let taken = changed.compactMap { claim in owners[claim].map { (claim, $0) } }.sorted { $0.0 < $1.0 }
        try await connection.query(
            """
            WITH records AS (
                INSERT INTO log_records (position, stream_id, stream_version, timestamp_us, event_id, type, schema_version, metadata, payload, crc, hash)
                SELECT * FROM unnest(\(rows.positions)::bigint[], \(rows.streams)::text[], \(rows.versions)::bigint[], \(rows.timestamps)::bigint[],
                    \(rows.ids)::uuid[], \(rows.types)::text[], \(rows.schemaVersions)::integer[], \(rows.metadata)::bytea[], \(rows.payloads)::bytea[],
                    \(rows.crcs)::integer[], \(rows.hashes)::bytea[])),
            released AS (DELETE FROM log_claims WHERE claim = ANY(\(released)::text[])),
            taken AS (
                INSERT INTO log_claims (claim, stream_id) SELECT * FROM unnest(\(taken.map(\.0))::text[], \(taken.map(\.1))::text[])
                ON CONFLICT (claim) DO UPDATE SET stream_id = EXCLUDED.stream_id),
            moved AS (
                UPDATE log_head SET position = \(Int64(head.position)), hash = \(ByteBuffer(bytes: head.hash.bytes)), timestamp_us = \(head.timestamp))
            SELECT pg_notify(\(channel), \(String(head.position)))
            """, logger: logger)
    }
}

/// The columns of the records a transaction inserts, written with one statement.
private struct RecordRows {
    var positions: [Int64] = []
    var streams: [String] = []
    var versions: [Int64] = []
    var timestamps: [Int64] = []
    var ids: [UUID] = []
    var types: [String] = []
    var schemaVersions: [Int32] = []
    var metadata: [ByteBuffer] = []
    var payloads: [ByteBuffer] = []
    var crcs: [Int32] = []
    var hashes: [ByteBuffer] = []

    mutating func add(
        position: UInt64, streamID: String, version: UInt64, timestamp: Int64, event: ProposedEvent, metadata pairs: [UInt8], crc: UInt32,
        hash: ChainHash
    ) {
        positions.append(Int64(position))
        streams.append(streamID)
        versions.append(Int64(version))
        timestamps.append(timestamp)
        ids.append(event.eventID)
        types.append(event.type)
        schemaVersions.append(Int32(bitPattern: event.schemaVersion))
        metadata.append(ByteBuffer(bytes: pairs))
        payloads.append(ByteBuffer(data: event.payload))
        crcs.append(Int32(bitPattern: crc))
        hashes.append(ByteBuffer(bytes: hash.bytes))
    }
}

/// A failure of the server or the connection, with the server's own words (postgres-nio keeps
/// them out of its errors' plain descriptions).
struct PostgresFailure: Error, CustomStringConvertible {
    let description: String

    static func wrap(_ error: any Error, doing what: String) -> EventLogError {
        if let error = error as? EventLogError { return error }
        if let transaction = error as? PostgresTransactionError,
            let inner = transaction.closureError ?? transaction.commitError ?? transaction.beginError
        {
            return wrap(inner, doing: what)
        }
        if let error = error as? PostgresLogError { return .storage(error) }
        let detail: String
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message]
            detail = message.map { "the server said: \($0)" } ?? "\(error.code)" + (error.underlying.map { " (\($0))" } ?? "")
        } else {
            detail = String(describing: error)
        }
        return .storage(PostgresFailure(description: "cannot \(what): \(detail)"))
    }
}
