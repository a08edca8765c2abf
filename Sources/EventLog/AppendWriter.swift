//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import DequeModule
import Foundation
import LMDB

/// One append, validated and sized, on its way to a write transaction.
struct AppendRequest: @unchecked Sendable {
    let streamID: String
    let expected: ExpectedVersion
    let events: [ProposedEvent]
    let metadataPairs: [[(String, String)]]
    let sizes: [Int]
    /// Unique keys this stream takes, and keys it gives up, in the same transaction.
    let claims: Set<String>
    let releases: Set<String>
    /// The encoded size of all its records.
    var byteCount: Int { sizes.reduce(0, +) }
    /// Nil for an append run directly by its caller.
    var continuation: CheckedContinuation<AppendResult, any Error>?
}

/// The log's single writer, with group commit.
///
/// An append that finds the writer idle runs its own write transaction on its caller's thread (no
/// thread hop: the latency of a lone append is LMDB's). Appends that arrive while a transaction is
/// running queue up; a dedicated thread then drains the whole queue into one transaction and answers
/// every request after the commit, so many concurrent appenders share one `fdatasync`. Exactly one
/// write transaction runs at a time, each begun and committed on one thread, never across a
/// suspension point, as LMDB requires.
final class AppendWriter: @unchecked Sendable {
    private enum Owner { case none, caller, thread }

    private let condition = NSCondition()
    private var pending = Deque<AppendRequest>()
    private var owner = Owner.none
    private var stopping = false
    private var stopped = false

    private let environment: Environment
    private let databases: LogDatabases
    private let clock: @Sendable () -> Date
    private let maxBatchEvents: Int
    private let maxBatchBytes: Int
    private let onCommit: @Sendable (UInt64) -> Void
    private let path: String

    init(
        environment: Environment, databases: LogDatabases, clock: @escaping @Sendable () -> Date,
        maxBatchEvents: Int, maxBatchBytes: Int, onCommit: @escaping @Sendable (UInt64) -> Void
    ) {
        self.environment = environment
        self.databases = databases
        self.clock = clock
        self.maxBatchEvents = maxBatchEvents
        self.maxBatchBytes = maxBatchBytes
        self.onCommit = onCommit
        self.path = environment.path
        let thread = Thread { [self] in run() }
        thread.name = "EventLog writer"
        thread.start()
    }

    /// Appends: directly when the writer is idle, otherwise through the queue.
    func append(_ request: AppendRequest) async throws -> AppendResult {
        if let outcome = try appendDirectly(request) {
            return try outcome.get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue(request, continuation: continuation)
        }
    }

    /// Runs the request on the calling thread if nobody is writing; nil when it must queue.
    private func appendDirectly(_ request: AppendRequest) throws -> Result<AppendResult, any Error>? {
        condition.lock()
        if stopping {
            condition.unlock()
            throw EventLogError.closed(path: path)
        }
        guard owner == .none && pending.isEmpty else {
            condition.unlock()
            return nil
        }
        owner = .caller
        condition.unlock()
        let outcome = process([request]).first!
        condition.lock()
        owner = .none
        if !pending.isEmpty || stopping { condition.broadcast() }
        condition.unlock()
        return outcome
    }

    private func enqueue(_ request: AppendRequest, continuation: CheckedContinuation<AppendResult, any Error>) {
        condition.lock()
        if stopping {
            condition.unlock()
            continuation.resume(throwing: EventLogError.closed(path: path))
            return
        }
        var queued = request
        queued.continuation = continuation
        pending.append(queued)
        if owner == .none { condition.broadcast() }
        condition.unlock()
    }

    /// Finishes the queued requests, then ends the thread. Returns when it has ended.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while (pending.isEmpty || owner != .none) && !(stopping && pending.isEmpty && owner == .none) {
                condition.wait()
            }
            if pending.isEmpty {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            owner = .thread
            var batch: [AppendRequest] = []
            var events = 0
            var bytes = 0
            while let next = pending.first,
                batch.isEmpty || (events + next.events.count <= maxBatchEvents && bytes + next.byteCount <= maxBatchBytes)
            {
                batch.append(pending.removeFirst())
                events += next.events.count
                bytes += next.byteCount
            }
            condition.unlock()
            let outcomes = process(batch)
            condition.lock()
            owner = .none
            condition.unlock()
            for (request, outcome) in zip(batch, outcomes) {
                request.continuation?.resume(with: outcome)
            }
        }
    }

    /// Runs `batch` in one write transaction and returns each request's outcome. A request that
    /// fails validation writes nothing and does not hold back the others.
    private func process(_ batch: [AppendRequest]) -> [Result<AppendResult, any Error>] {
        var outcomes: [Result<AppendResult, any Error>] = []
        var lastPosition: UInt64 = 0
        do {
            try environment.write { txn in
                outcomes.removeAll(keepingCapacity: true)
                var head = try LogHead.read(txn, records: databases.records, path: path)
                for request in batch {
                    do {
                        outcomes.append(.success(try apply(request, txn: txn, head: &head)))
                    } catch let error as EventLogError {
                        outcomes.append(.failure(error))
                    }
                }
                lastPosition = head.position
            }
        } catch {
            if batch.count > 1 && !(error is EventLogError) && !((error as? LMDBError)?.isDiskFull ?? false) {
                // One request may be at fault (e.g. a transaction too large): retry each alone.
                return batch.flatMap { process([$0]) }
            }
            let wrapped = EventLogError.wrapping(error, path: path)
            return batch.map { _ in .failure(wrapped) }
        }
        onCommit(lastPosition)
        return outcomes
    }

    /// Validates one request against the log (inside the transaction), then writes it.
    private func apply(_ request: AppendRequest, txn: Transaction, head: inout LogHead) throws -> AppendResult {
        // An event id already in the log makes this a retry: answer with the original positions.
        var found: [(index: Int, position: UInt64)] = []
        for (index, event) in request.events.enumerated() {
            if let stored = try txn.get(databases.eventIDs, key: LogDatabases.eventIDKey(event.eventID)), stored.count == 8 {
                found.append((index, stored.withUnsafeBytes { BigEndian.uint64($0) }))
            }
        }
        if let firstFound = found.first {
            let positions = found.map(\.position)
            guard found.count == request.events.count, let first = positions.first, let last = positions.last,
                last >= first, positions == Array(first...last)
            else {
                throw EventLogError.duplicateEventID(request.events[firstFound.index].eventID, existingPosition: firstFound.position)
            }
            let version = try txn.withCursor(databases.records) { cursor -> UInt64 in
                guard let entry = try cursor.seek(atOrAfter: BigEndian.bytes(last)) else { return 0 }
                return BigEndian.uint64(entry.value, at: 46)
            }
            return AppendResult(positions: first...last, streamVersion: version, wasDuplicate: true)
        }

        let current = try LogDatabases.streamVersion(request.streamID, in: txn, streams: databases.streams)
        switch request.expected {
        case .any:
            break
        case .noStream:
            guard current == 0 else {
                throw EventLogError.wrongExpectedVersion(stream: request.streamID, expected: request.expected, actual: current)
            }
        case let .exact(expected):
            guard current == expected else {
                throw EventLogError.wrongExpectedVersion(stream: request.streamID, expected: request.expected, actual: current == 0 ? nil : current)
            }
        }

        // Claims: unique keys (such as user ids) owned by one stream at a time.
        for claim in request.claims.sorted() {
            if let owner = try txn.get(databases.claims, key: Array(claim.utf8)), owner != Array(request.streamID.utf8) {
                throw EventLogError.claimTaken(claim, owner: String(decoding: owner, as: UTF8.self))
            }
        }
        for release in request.releases where !request.claims.contains(release) {
            if try txn.get(databases.claims, key: Array(release.utf8)) == Array(request.streamID.utf8) {
                _ = try txn.delete(databases.claims, key: Array(release.utf8))
            }
        }
        for claim in request.claims {
            try txn.put(databases.claims, key: Array(claim.utf8), value: Array(request.streamID.utf8))
        }

        let now = Int64((clock().timeIntervalSince1970 * 1_000_000).rounded())
        let timestamp = max(now, head.timestampMicros)
        let firstPosition = head.position + 1
        var version = current
        for (index, event) in request.events.enumerated() {
            let position = head.position + 1
            version += 1
            let positionKey = BigEndian.bytes(position)
            var hash = head.hash
            try positionKey.withUnsafeBytes { key in
                try txn.reserve(databases.records, key: key, count: request.sizes[index], flags: .append) { buffer in
                    hash = RecordFormat.write(
                        into: buffer, position: position, streamVersion: version, timestampMicros: timestamp,
                        streamID: request.streamID, event: event, pairs: request.metadataPairs[index], previous: head.hash)
                }
            }
            try txn.put(databases.streams, key: LogDatabases.streamKey(request.streamID, version: version), value: positionKey, flags: .noOverwrite)
            try txn.put(databases.eventIDs, key: LogDatabases.eventIDKey(event.eventID), value: positionKey, flags: .noOverwrite)
            head = LogHead(position: position, hash: hash, timestampMicros: timestamp)
        }
        return AppendResult(positions: firstPosition...head.position, streamVersion: version, wasDuplicate: false)
    }
}
