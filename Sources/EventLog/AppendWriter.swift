//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import DequeModule
import Foundation
import LMDB

/// One append waiting for the writer.
struct AppendRequest: @unchecked Sendable {
    let streamID: String
    let expected: ExpectedVersion
    let events: [ProposedEvent]
    let metadataPairs: [[(String, String)]]
    let sizes: [Int]
    let continuation: CheckedContinuation<AppendResult, any Error>
}

/// The single writer of a log: a dedicated thread that drains every waiting append into one LMDB
/// write transaction and answers them after the commit (group commit). LMDB write transactions
/// belong to the thread that began them, so no other thread ever writes.
final class AppendWriter: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending = Deque<AppendRequest>()
    private var stopping = false
    private var stopped = false

    private let environment: Environment
    private let databases: LogDatabases
    private let clock: @Sendable () -> Date
    private let maxBatchEvents: Int
    private let maxBatchBytes: Int
    private let onCommit: @Sendable (UInt64) -> Void
    private let path: String

    init(environment: Environment, databases: LogDatabases, clock: @escaping @Sendable () -> Date,
         maxBatchEvents: Int, maxBatchBytes: Int, onCommit: @escaping @Sendable (UInt64) -> Void) {
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

    /// Queues a request; it is answered after its transaction commits or fails.
    func submit(_ request: AppendRequest) {
        condition.lock()
        if stopping {
            condition.unlock()
            request.continuation.resume(throwing: EventLogError.closed(path: path))
            return
        }
        pending.append(request)
        condition.signal()
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
            while pending.isEmpty && !stopping { condition.wait() }
            if pending.isEmpty && stopping {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            var batch: [AppendRequest] = []
            var events = 0, bytes = 0
            while let next = pending.first,
                  batch.isEmpty || (events + next.events.count <= maxBatchEvents && bytes + next.sizes.reduce(0, +) <= maxBatchBytes) {
                batch.append(pending.removeFirst())
                events += next.events.count
                bytes += next.sizes.reduce(0, +)
            }
            condition.unlock()
            process(batch)
        }
    }

    private func process(_ batch: [AppendRequest]) {
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
                        // A rejected request wrote nothing; the others go on.
                        outcomes.append(.failure(error))
                    }
                }
                lastPosition = head.position
            }
        } catch {
            if batch.count > 1 && !(error is EventLogError) && !((error as? LMDBError)?.isDiskFull ?? false) {
                // One request may be at fault (e.g. a transaction too large): retry each alone.
                for request in batch { process([request]) }
                return
            }
            let wrapped = EventLogError.wrapping(error, path: path)
            for request in batch { request.continuation.resume(throwing: wrapped) }
            return
        }
        onCommit(lastPosition)
        for (request, outcome) in zip(batch, outcomes) {
            request.continuation.resume(with: outcome)
        }
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
                  last >= first, positions == Array(first...last) else {
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
            guard current == 0 else { throw EventLogError.wrongExpectedVersion(stream: request.streamID, expected: request.expected, actual: current) }
        case let .exact(expected):
            guard current == expected else {
                throw EventLogError.wrongExpectedVersion(stream: request.streamID, expected: request.expected, actual: current == 0 ? nil : current)
            }
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
                    hash = RecordFormat.write(into: buffer, position: position, streamVersion: version, timestampMicros: timestamp,
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
