//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import PostgresEventLog
import Projections
import SpeziAccountStore
import SpeziAccountTesting

/// The PostgreSQL workloads, in one child process on a throwaway cluster of its own (fsync on):
/// this project's `PostgresEventLog` against `RawPostgres`, plain INSERTs of the same events into
/// one table with a bigserial position through the same client library (no chain, no claims, no
/// expected versions). Durable = `synchronous_commit = on`; the bulk import runs with it off on
/// both sides.
enum PostgresWorkloads {
    static func run(_ scale: Scale, in directory: URL) async throws -> [Figure] {
        let server = try await PostgresServer.start(name: "peer-compare")
        defer { server.remove() }
        var figures = try await single(scale, server)
        figures += try await group(scale, server)
        figures += try await bulkReplayRebuild(scale, server, directory)
        return figures
    }

    private static func openLog(_ server: PostgresServer, schema: String, durable: Bool) async throws -> PostgresEventLog {
        var options = PostgresLogOptions()
        options.durability = durable ? .durable : .relaxed
        return try await PostgresEventLog.open(server.url(schema: schema), options: options)
    }

    /// Single durable appends, one event per commit, the three sides taking turns round by round:
    /// the log, the plain INSERT and the work-equal one (`RawPostgresRecords`: the log's columns,
    /// indexes, CRC-32C and chain, without its checks, head row and notification).
    static func single(_ scale: Scale, _ server: PostgresServer) async throws -> [Figure] {
        let log = try await openLog(server, schema: "single", durable: true)
        let raw = try await RawPostgres(server: server, table: "single_events", durable: true, connections: 1)
        let workEqual = try await RawPostgresRecords(server: server, table: "single_records", durable: true)
        var watches = [Stopwatch(), Stopwatch(), Stopwatch()]
        var versions: [String: UInt64] = [:]
        for round in 0..<scale.singleRounds {
            let first = round * scale.singleDurablePerRound
            let events = AppendWorkloads.sampleEvents(scale.singleDurablePerRound, seed: 0x70_0000_0000 &+ UInt64(first))
            let streams = (first..<(first + events.count)).map { "account-\($0 % 100)" }
            let items = zip(events, streams).map { event, stream in
                versions[stream, default: 0] += 1
                return WorkEqualImport.Item(stream: stream, version: versions[stream]!, event: event)
            }
            try await watches[0].timeAsync {
                for (event, stream) in zip(events, streams) { _ = try await log.append([event], to: stream) }
            }
            try await watches[1].timeAsync {
                for (event, stream) in zip(events, streams) { try await raw.insert(event, stream: stream) }
            }
            try await watches[2].timeAsync {
                for item in items { try await workEqual.insert(item) }
            }
        }
        await log.close()
        await raw.close()
        await workEqual.close()
        let operations = scale.singleRounds * scale.singleDurablePerRound
        let rows = [
            ("pg-single", "durable append, 1 writer, 1 event/commit", BackEnd.postgres, watches[0]),
            ("pg-single", "durable append, 1 writer, 1 event/commit", .rawPostgres, watches[1]),
            ("pg-single-workequal", singleWorkEqualTitle, .postgres, watches[0]),
            ("pg-single-workequal", singleWorkEqualTitle, .rawPostgres, watches[2])
        ]
        return rows.map { key, title, backEnd, watch in
            var figure = Figure(key, title, backEnd, operations: operations, seconds: watch.seconds)
            figure.sharedProcess = true
            return figure
        }
    }

    /// The work-equal single row's title.
    private static let singleWorkEqualTitle =
        "durable append, 1 writer, 1 event/commit, against raw INSERTs into the log's table (11 columns, 3 unique indexes, CRC-32C and chain computed)"

    /// 8 and 64 concurrent durable writers, one event per append, a stream each. The raw side has
    /// a connection per writer (PostgreSQL flushes the WAL of concurrent commits together); the log
    /// groups appends into shared transactions.
    static func group(_ scale: Scale, _ server: PostgresServer) async throws -> [Figure] {
        var figures: [Figure] = []
        for (writers, perWriter) in scale.groupWriters where writers > 1 {
            let events = AppendWorkloads.sampleEvents(writers * perWriter, seed: 0x71_0000_0000 &+ UInt64(writers) << 24)
            let log = try await openLog(server, schema: "group_\(writers)", durable: true)
            var logWatch = Stopwatch()
            try await logWatch.timeAsync {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for index in 0..<perWriter { _ = try await log.append([events[writer * perWriter + index]], to: "writer-\(writer)") }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            await log.close()
            let raw = try await RawPostgres(server: server, table: "group_\(writers)_events", durable: true, connections: writers)
            var rawWatch = Stopwatch()
            try await rawWatch.timeAsync {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for index in 0..<perWriter { try await raw.insert(events[writer * perWriter + index], stream: "writer-\(writer)") }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            await raw.close()
            let title = "durable append, \(writers) concurrent writers"
            figures.append(Figure("pg-group-\(writers)", title, .postgres, operations: writers * perWriter, seconds: logWatch.seconds))
            figures.append(Figure("pg-group-\(writers)", title, .rawPostgres, operations: writers * perWriter, seconds: rawWatch.seconds))
        }
        return figures
    }

    /// The data set for the bulk rows: a tenth of the embedded one (at most 100,000 events).
    static func bulkScale(_ scale: Scale) -> (accounts: Int, records: Int) {
        let accounts = max(min(scale.accounts / 10, 10_000), 100)
        return (accounts, accounts * Dataset.eventsPerAccount)
    }

    /// Bulk import (1,000 events a transaction, `synchronous_commit = off`), then a full replay
    /// that decodes every event, then a rebuild of the details table: the log's
    /// `AccountDetailsProjection` into local LMDB, against the raw loop's fold of the rows it reads
    /// into LMDB.
    static func bulkReplayRebuild(_ scale: Scale, _ server: PostgresServer, _ directory: URL) async throws -> [Figure] {
        let (accounts, records) = bulkScale(scale)
        let title = "\(count(records)) events"
        var batches: [[(stream: String, events: [ProposedEvent], expected: ExpectedVersion)]] = []
        var current: [(stream: String, events: [ProposedEvent], expected: ExpectedVersion)] = []
        // The same events for the work-equal peer, with their stream versions.
        var itemBatches: [[WorkEqualImport.Item]] = []
        var currentItems: [WorkEqualImport.Item] = []
        let per = Dataset.eventsPerCommit
        for round in 0..<(Dataset.eventsPerAccount / per) {
            for account in 0..<accounts {
                let indexes = (round * per)..<(round * per + per)
                let events = indexes.map {
                    Dataset.proposed(
                        Dataset.event(account: account, index: $0), id: 0x72_0000_0000 &+ UInt64(account * Dataset.eventsPerAccount + $0))
                }
                current.append((Dataset.accountId(account), events, round == 0 ? .noStream : .exact(UInt64(round * per))))
                currentItems += zip(indexes, events).map { index, event in
                    WorkEqualImport.Item(stream: Dataset.accountId(account), version: UInt64(index + 1), event: event)
                }
                if current.count * per >= 1_000 {
                    batches.append(current)
                    itemBatches.append(currentItems)
                    current.removeAll()
                    currentItems.removeAll()
                }
            }
        }
        if !current.isEmpty {
            batches.append(current)
            itemBatches.append(currentItems)
        }

        // Bulk import.
        let log = try await openLog(server, schema: "bulk", durable: false)
        let raw = try await RawPostgres(server: server, table: "bulk_events", durable: false, connections: 1)
        let workEqual = try await RawPostgresRecords(server: server, table: "bulk_records")
        var logBulk = Stopwatch()
        var rawBulk = Stopwatch()
        var workEqualBulk = Stopwatch()
        for (batch, items) in zip(batches, itemBatches) {
            let appends = batch.map { StreamAppend(streamID: $0.stream, events: $0.events, expectedVersion: $0.expected) }
            let outcomes = await logBulk.timeAsync { await log.appendBatch(appends) }
            for outcome in outcomes { _ = try outcome.get() }
            try await rawBulk.timeAsync { try await raw.insertBatch(batch.flatMap { item in item.events.map { (item.stream, $0) } }) }
            try await workEqualBulk.timeAsync { try await workEqual.insertBatch(items) }
        }
        await workEqual.close()

        // Replay: every record read in batches of 1,000 and decoded.
        var logReplay = Stopwatch()
        var rawReplay = Stopwatch()
        var weights = (0, 0)
        var logCount = 0
        var rawCount = 0
        try await logReplay.timeAsync {
            var next: UInt64 = 1
            while true {
                let batch = try await log.read(from: next, direction: .forward, limit: 1_000)
                guard let last = batch.last else { break }
                for record in batch {
                    weights.0 &+= BulkWorkloads.weight(try AccountEvent.decode(type: record.type, payload: [UInt8](record.payload)))
                }
                logCount += batch.count
                next = last.position + 1
            }
        }
        try await rawReplay.timeAsync {
            var after: Int64 = 0
            while true {
                let rows = try await raw.read(after: after, limit: 1_000)
                guard let last = rows.last else { break }
                for row in rows { weights.1 &+= BulkWorkloads.weight(try AccountEvent.decode(type: row.type, payload: row.payload)) }
                rawCount += rows.count
                after = last.position
            }
        }
        precondition(logCount == records && rawCount == records && weights.0 == weights.1, "the replays differ")

        // The same replay through a subscription (what a projection's catch-up uses), compared with
        // the same raw loop.
        var subscribedReplay = Stopwatch()
        var subscribed = (count: 0, weight: 0)
        try await subscribedReplay.timeAsync {
            for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 1_000) {
                for record in batch {
                    subscribed.weight &+= BulkWorkloads.weight(try AccountEvent.decode(type: record.type, payload: [UInt8](record.payload)))
                }
                subscribed.count += batch.count
                if subscribed.count >= records { break }
            }
        }
        precondition(subscribed.count == records && subscribed.weight == weights.0, "the subscribed replay differs")

        // Rebuild of the details table.
        var logRebuild = Stopwatch()
        let projections = directory.appendingPathComponent("pg-projections").path
        let last = try await log.lastPosition()
        let store = try await logRebuild.timeAsync {
            let store = try ProjectionStore(path: projections, log: log, projections: [AccountDetailsProjection()])
            try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: last)
            return store
        }
        await store.close()
        await log.close()
        var rawRebuild = Stopwatch()
        let states = try RawLMDB(directory: directory.appendingPathComponent("pg-raw-states"), sync: .lastCommitMayRollBack)
        try await rawRebuild.timeAsync {
            var after: Int64 = 0
            while true {
                let rows = try await raw.read(after: after, limit: 4_096)
                guard let lastRow = rows.last else { break }
                try states.write { txn in
                    for row in rows {
                        try Array(row.stream.utf8).withUnsafeBytes { stream in
                            try row.payload.withUnsafeBytes { payload in
                                try DetailsWorkloads.foldRecord(states, txn, stream: stream, type: row.type, payload: payload, date: row.date)
                            }
                        }
                    }
                }
                after = lastRow.position
            }
        }
        await raw.close()
        return [
            Figure(
                "pg-bulk", "bulk import of \(title), 1,000 per transaction (no WAL flush wait)", .postgres, operations: records,
                seconds: logBulk.seconds),
            Figure(
                "pg-bulk", "bulk import of \(title), 1,000 per transaction (no WAL flush wait)", .rawPostgres, operations: records,
                seconds: rawBulk.seconds),
            Figure("pg-bulk-workequal", workEqualTitle(title), .postgres, operations: records, seconds: logBulk.seconds),
            Figure("pg-bulk-workequal", workEqualTitle(title), .rawPostgres, operations: records, seconds: workEqualBulk.seconds),
            Figure("pg-replay", "full replay of \(title), decoded", .postgres, operations: records, seconds: logReplay.seconds),
            Figure("pg-replay", "full replay of \(title), decoded", .rawPostgres, operations: records, seconds: rawReplay.seconds),
            Figure(
                "pg-replay-subscribed", "full replay of \(title), decoded, through a subscription", .postgres,
                operations: records, seconds: subscribedReplay.seconds),
            Figure(
                "pg-replay-subscribed", "full replay of \(title), decoded, through a subscription", .rawPostgres,
                operations: records, seconds: rawReplay.seconds),
            Figure(
                "pg-rebuild", "rebuild of the details table (\(count(accounts)) accounts) in local LMDB", .postgres, operations: records,
                seconds: logRebuild.seconds),
            Figure(
                "pg-rebuild", "rebuild of the details table (\(count(accounts)) accounts) in local LMDB", .rawPostgres, operations: records,
                seconds: rawRebuild.seconds)
        ]
    }

    /// The work-equal bulk row's title: its peer is `RawPostgresRecords`.
    private static func workEqualTitle(_ events: String) -> String {
        "bulk import of \(events), 1,000 per transaction, against raw INSERTs into the log's table (11 columns, 3 unique indexes, CRC-32C and chain computed)"
    }
}
