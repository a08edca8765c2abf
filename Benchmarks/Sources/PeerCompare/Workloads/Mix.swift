//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Projections
import SpeziAccountStore

/// 7. A realistic mix: many small account streams, chosen with a Zipf skew (a few hot accounts),
/// 8 concurrent durable writers, one event per append (70 % details changes, 20 % successful
/// logins, 5 % failed logins, 5 % password changes), and 2 catch-up subscribers that decode every
/// event while the writers run. Every side keeps the details table: the log through its
/// `ProjectionStore` (asynchronously, as the store does), raw LMDB and SQLite in the append's own
/// transaction. Figures: append latency (call to durable acknowledgement) and subscriber lag (a
/// writer's acknowledgement to a subscriber's delivery; delivery before the acknowledgement counts 0).
enum MixWorkload {
    struct Operation: Sendable {
        let stream: String
        let event: AccountEvent
        let proposed: ProposedEvent
    }

    static let writers = 8
    static let subscribers = 2

    static func operations(_ scale: Scale) -> [[Operation]] {
        let zipf = Zipf(count: scale.mixAccounts, exponent: 1.1)
        return (0..<writers).map { writer in
            var generator = SplitMix64(seed: 0x3170_0000 &+ UInt64(writer))
            return (0..<scale.mixPerWriter).map { index in
                let account = zipf.next(&generator)
                let event: AccountEvent
                switch generator.next() % 100 {
                case 0..<70: event = Dataset.modified(&generator)
                case 70..<90: event = .loginSucceeded
                case 90..<95: event = .loginFailed(reason: "wrongPassword")
                default: event = .passwordChanged(passwordHash: Dataset.passwordHash(&generator))
                }
                return Operation(
                    stream: Dataset.accountId(account), event: event,
                    proposed: Dataset.proposed(event, id: 0x3170_0000_0000 &+ UInt64(writer) << 32 &+ UInt64(index)))
            }
        }
    }

    static func mix(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        let operations = operations(scale)
        let total = writers * scale.mixPerWriter
        let acks = NanosTable(count: total)
        let seen = (0..<subscribers).map { _ in NanosTable(count: total) }
        let run: (seconds: Double, latencies: [UInt64], notes: [String: Double])
        switch backEnd {
        case .postgres, .rawPostgres: throw ChildError.notEmbedded(backEnd)
        case .log: run = try await onLog(scale, operations, acks: acks, seen: seen, in: directory)
        case .raw: run = try onRaw(scale, operations, acks: acks, seen: seen, in: directory)
        case .sqlite: run = try onSQLite(scale, operations, acks: acks, seen: seen, in: directory)
        }
        var lags: [UInt64] = []
        for table in seen {
            for index in 0..<total {
                let delivered = table[index]
                precondition(delivered != 0, "a subscriber missed event \(index)")
                lags.append(delivered > acks[index] ? delivered - acks[index] : 0)
            }
        }
        var figure = Figure("mix", "mix: Zipf accounts, 8 durable writers, 2 subscribers", backEnd, operations: total, seconds: run.seconds)
        figure.latency = Percentiles(nanos: run.latencies)
        figure.lag = Percentiles(nanos: lags)
        figure.notes = run.notes
        figure.notes["hotTop10Share"] = Zipf(count: scale.mixAccounts, exponent: 1.1).share(ofTop: 10)
        return [figure]
    }

    private static func onLog(
        _ scale: Scale, _ operations: [[Operation]], acks: NanosTable, seen: [NanosTable], in directory: URL
    )
        async throws -> (seconds: Double, latencies: [UInt64], notes: [String: Double])
    {
        var options = EventLogOptions()
        options.sync = .durable
        let log = try EventLog(path: directory.appendingPathComponent("log").path, options: options)
        // The accounts first (untimed): 64 concurrent signups at a time share commits.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask {
                    for account in stride(from: lane, to: scale.mixAccounts, by: 64) {
                        _ = try await log.append(
                            Dataset.proposed(Dataset.event(account: account, index: 0), id: 0x3100_0000 &+ UInt64(account)),
                            to: Dataset.accountId(account), expectedVersion: .noStream)
                    }
                }
            }
            try await group.waitForAll()
        }
        let base = try log.lastPosition()
        let cache = try ProjectionStore(
            path: directory.appendingPathComponent("projections").path, log: log, projections: [AccountDetailsProjection()])
        try await cache.waitUntilApplied(AccountDetailsProjection.projectionName, position: base)
        let total = acks.count
        let readers = seen.map { table in
            Task {
                var delivered = 0
                for try await record in log.subscribe(after: base) {
                    _ = try record.payload.withUnsafeBytes { try AccountEvent.decode(type: record.type, payload: $0) }
                    table[Int(record.position - base - 1)] = nowNanos()
                    delivered += 1
                    if delivered == total { break }
                }
            }
        }
        let start = nowNanos()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for lane in operations {
                group.addTask {
                    var latencies: [UInt64] = []
                    latencies.reserveCapacity(lane.count)
                    for operation in lane {
                        let begin = nowNanos()
                        let result = try await log.append(operation.proposed, to: operation.stream)
                        let end = nowNanos()
                        latencies.append(end - begin)
                        acks[Int(result.positions.lowerBound - base - 1)] = end
                    }
                    return latencies
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let writersDone = nowNanos()
        try await cache.waitUntilApplied(AccountDetailsProjection.projectionName, position: base + UInt64(total))
        let cacheDone = nowNanos()
        for reader in readers { try await reader.value }
        await cache.close()
        await log.close()
        return (Double(writersDone - start) / 1e9, latencies, ["cacheCaughtUpAfterWritersMs": Double(cacheDone - writersDone) / 1e6])
    }

    private static func onRaw(
        _ scale: Scale, _ operations: [[Operation]], acks: NanosTable, seen: [NanosTable], in directory: URL
    )
        throws -> (seconds: Double, latencies: [UInt64], notes: [String: Double])
    {
        let raw = try RawLMDB(directory: directory.appendingPathComponent("raw"), sync: .durable)
        @Sendable func appendAndFold(_ txn: OpaquePointer, position: UInt64, _ event: AccountEvent, stream: String) throws {
            let now = microsecondsNow()
            try raw.putRecord(
                txn, position: position, RawFrame.make(type: event.typeName, timestamp: now, stream: stream, payload: event.encodedPayload()))
            var key = Array(stream.utf8)
            try key.withUnsafeMutableBytes { key in
                let key = UnsafeRawBufferPointer(key)
                let previous = try raw.get(txn, raw.states, key: key).map { try AccountState(encoded: [UInt8]($0)) }
                guard
                    let next = AccountState.applying(
                        event, to: previous, accountId: stream, version: (previous?.version ?? 0) + 1,
                        at: Date(timeIntervalSince1970: Double(now) / 1e6))
                else { return }
                try next.encoded().withUnsafeBytes { try raw.put(txn, raw.states, key: key, value: $0) }
            }
        }
        let base = UInt64(scale.mixAccounts)
        try raw.write { txn in
            for account in 0..<scale.mixAccounts {
                try appendAndFold(txn, position: UInt64(account + 1), Dataset.event(account: account, index: 0), stream: Dataset.accountId(account))
            }
        }
        return try runThreads(operations, acks: acks, seen: seen, base: base) { operation in
            try raw.write { txn in
                let position = try raw.lastPosition(txn) + 1
                try appendAndFold(txn, position: position, operation.event, stream: operation.stream)
                return position
            }
        } read: { after, deliver in
            try raw.read { txn in
                var last = after
                _ = try raw.forEachRecord(txn, after: after, limit: 256) { position, bytes in
                    let view = RawFrame.View(bytes)
                    _ = try AccountEvent.decode(type: view.type, payload: view.payload)
                    deliver(position)
                    last = position
                }
                return last
            }
        }
    }

    private static func onSQLite(
        _ scale: Scale, _ operations: [[Operation]], acks: NanosTable, seen: [NanosTable], in directory: URL
    )
        throws -> (seconds: Double, latencies: [UInt64], notes: [String: Double])
    {
        let sqlite = try SQLitePeer(directory: directory.appendingPathComponent("sqlite"), sync: .full)
        try sqlite.pool.write { db in
            for account in 0..<scale.mixAccounts {
                let event = Dataset.event(account: account, index: 0)
                let stream = Dataset.accountId(account)
                _ = try SQLitePeer.append(db, [Dataset.proposed(event, id: 0x3100_0000 &+ UInt64(account))], to: stream, expectedVersion: .noStream)
                try SQLitePeer.fold(db, event, stream: stream, version: 1, at: Date())
            }
        }
        return try runThreads(operations, acks: acks, seen: seen, base: UInt64(scale.mixAccounts)) { operation in
            UInt64(try sqlite.appendAndProject(operation.event, proposed: operation.proposed, to: operation.stream))
        } read: { after, deliver in
            var last = after
            for (position, _) in try sqlite.events(after: Int64(after), limit: 256) {
                deliver(UInt64(position))
                last = UInt64(position)
            }
            return last
        }
    }

    /// The peers' run: one thread per writer, one per subscriber; writers ring a bell after each
    /// commit, subscribers wait for it and read what is new.
    private static func runThreads(
        _ operations: [[Operation]], acks: NanosTable, seen: [NanosTable], base: UInt64,
        append: @escaping @Sendable (Operation) throws -> UInt64,
        read: @escaping @Sendable (UInt64, (UInt64) -> Void) throws -> UInt64
    )
        throws -> (seconds: Double, latencies: [UInt64], notes: [String: Double])
    {
        let bell = CommitBell()
        let failure = ErrorBox()
        let collected = LatencyCollector()
        let total = UInt64(acks.count)
        let subscribersDone = DispatchGroup()
        for table in seen {
            subscribersDone.enter()
            Thread.detachNewThread {
                defer { subscribersDone.leave() }
                var position = base
                do {
                    while position < base + total, failure.error == nil {
                        bell.wait(beyond: position)
                        position = try read(position) { table[Int($0 - base - 1)] = nowNanos() }
                    }
                } catch {
                    failure.set(error)
                    bell.ring(.max)
                }
            }
        }
        let writersDone = DispatchGroup()
        let start = nowNanos()
        for lane in operations {
            writersDone.enter()
            Thread.detachNewThread {
                defer { writersDone.leave() }
                var latencies: [UInt64] = []
                latencies.reserveCapacity(lane.count)
                do {
                    for operation in lane {
                        let begin = nowNanos()
                        let position = try append(operation)
                        let end = nowNanos()
                        bell.ring(position)
                        latencies.append(end - begin)
                        acks[Int(position - base - 1)] = end
                    }
                } catch {
                    failure.set(error)
                    bell.ring(.max)
                }
                collected.add(latencies)
            }
        }
        writersDone.wait()
        let seconds = Double(nowNanos() - start) / 1e9
        subscribersDone.wait()
        if let error = failure.error { throw error }
        return (seconds, collected.all, [:])
    }
}

/// Nanosecond stamps by index, written by many threads (each index by one) and read afterwards.
final class NanosTable: @unchecked Sendable {
    private let storage: UnsafeMutableBufferPointer<UInt64>
    var count: Int { storage.count }

    init(count: Int) {
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0)
    }

    deinit { storage.deallocate() }

    subscript(index: Int) -> UInt64 {
        get { storage[index] }
        set { storage[index] = newValue }
    }
}

/// Wakes subscriber threads after a commit.
final class CommitBell: @unchecked Sendable {
    private let condition = NSCondition()
    private var last: UInt64 = 0

    func ring(_ position: UInt64) {
        condition.lock()
        last = max(last, position)
        condition.broadcast()
        condition.unlock()
    }

    func wait(beyond position: UInt64) {
        condition.lock()
        while last <= position { condition.wait() }
        condition.unlock()
    }
}

/// The writers' latencies, gathered from their threads.
final class LatencyCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [UInt64] = []
    func add(_ more: [UInt64]) { lock.withLock { samples += more } }
    var all: [UInt64] { lock.withLock { samples } }
}
