//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import PostgresEventLog
import PostgresNIO
import SpeziAccountStore

// The PostgreSQL paths of hot-paths (main.swift's usage describes them): each returns the count
// and checksum it prints.

/// `pg-single URL [COUNT]`: durable appends one at a time, as peer-compare's pg-single row.
func postgresSingle(_ arguments: [String], limit: Int) throws -> (count: Int, checksum: Int) {
    let appends = limit == .max ? 2_000 : limit
    let url = arguments[2]
    let started = Date()
    let checksum = try blocking {
        var options = PostgresLogOptions()
        options.durability = .durable
        let log = try await PostgresEventLog.open(url, options: options)
        var written = 0
        for index in 0..<appends {
            let event = ProposedEvent(type: "account.modified", payload: Data(repeating: UInt8(index & 0x7f), count: 160))
            written += try await log.append([event], to: "account-\(index % 100)").positions.count
        }
        await log.close()
        return written
    }
    FileHandle.standardError.write(Data("pg-single: \(Int(Double(checksum) / Date().timeIntervalSince(started))) events/s\n".utf8))
    return (checksum, checksum)
}

/// `pg-replay URL [COUNT]`: an import when the log is short, then three replays.
func postgresReplay(_ arguments: [String], limit: Int) throws -> (count: Int, checksum: Int) {
    // Replays the PostgreSQL log at URL in batches of 1,000 records, each payload decoded (as
    // peer-compare's pg-replay row), then through a subscription, three times; first it imports COUNT events (default
    // 100,000) from the LMDB log in HOT_PATHS_SOURCE (default /tmp/hp2/log) if it has fewer.
    let wanted = limit == .max ? 100_000 : limit
    let url = arguments[2]
    let source = ProcessInfo.processInfo.environment["HOT_PATHS_SOURCE"] ?? "/tmp/hp2/log"
    var sourceAppends: [StreamAppend] = []
    try openLog(URL(fileURLWithPath: source)).scan { record in
        let event = ProposedEvent(
            eventID: record.eventID, type: record.type, schemaVersion: record.schemaVersion, metadata: record.metadata,
            payload: Data(record.payload))
        sourceAppends.append(StreamAppend(streamID: record.streamID, events: [event], expectedVersion: .any))
        return sourceAppends.count < wanted
    }
    let allAppends = sourceAppends
    let checksum = try blocking {
        let log = try await PostgresEventLog.open(url, options: PostgresLogOptions())
        let present = Int(try await log.lastPosition())
        if present < wanted {
            let appends = Array(allAppends[present...])
            let started = Date()
            for start in stride(from: 0, to: appends.count, by: 1_000) {
                for outcome in await log.appendBatch(Array(appends[start..<min(start + 1_000, appends.count)])) { _ = try outcome.get() }
            }
            let rate = Int(Double(appends.count) / Date().timeIntervalSince(started))
            FileHandle.standardError.write(Data("pg-import: \(appends.count) events, \(rate) events/s\n".utf8))
        }
        var total = 0
        // HOT_PATHS_IMPORT_ONLY: only the import (to profile it alone).
        let rounds = ProcessInfo.processInfo.environment["HOT_PATHS_IMPORT_ONLY"] == nil ? 3 : 0
        for _ in 0..<rounds {
            let started = Date()
            var next: UInt64 = 1
            var records = 0
            while true {
                let batch = try await log.read(from: next, direction: .forward, limit: 1_000)
                guard let last = batch.last else { break }
                for record in batch {
                    let event = try record.payload.withUnsafeBytes { try AccountEvent.decode(type: record.type, payload: $0) }
                    if case let .detailsModified(modified, removed) = event { total &+= modified.count &+ removed.count } else { total &+= 1 }
                }
                records += batch.count
                next = last.position + 1
            }
            FileHandle.standardError.write(Data("pg-replay: \(Int(Double(records) / Date().timeIntervalSince(started))) events/s\n".utf8))
            let subscribed = Date()
            var delivered = 0
            for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 1_000) {
                for record in batch {
                    let event = try record.payload.withUnsafeBytes { try AccountEvent.decode(type: record.type, payload: $0) }
                    if case let .detailsModified(modified, removed) = event { total &+= modified.count &+ removed.count } else { total &+= 1 }
                }
                delivered += batch.count
                if delivered >= records { break }
            }
            FileHandle.standardError.write(
                Data("pg-subscribed: \(Int(Double(delivered) / Date().timeIntervalSince(subscribed))) events/s\n".utf8))
        }
        await log.close()
        return total
    }
    return (0, checksum)
}

/// `pg-raw PORT [COUNT]`: the raw INSERT baseline.
func postgresRaw(_ arguments: [String], limit: Int) throws -> (count: Int, checksum: Int) {
    // The same appends as plain INSERTs into a table with a bigserial position (peer-compare's
    // raw PostgreSQL baseline), on port PORT of 127.0.0.1 (user postgres, database postgres).
    let appends = limit == .max ? 2_000 : limit
    let port = Int(arguments[2]) ?? 5432
    let started = Date()
    let checksum = try blocking {
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: port, username: "postgres", password: nil, database: "postgres", tls: .disable)
        configuration.options.maximumConnections = 1
        configuration.options.additionalStartupParameters = [("synchronous_commit", "on")]
        let client = PostgresClient(configuration: configuration)
        let runner = Task.immediate { await client.run() }
        try await client.query(
            "CREATE TABLE IF NOT EXISTS hot_paths_raw (position bigserial PRIMARY KEY, stream text NOT NULL, type text NOT NULL, timestamp_us bigint NOT NULL, payload bytea NOT NULL)"
        )
        for index in 0..<appends {
            let payload = ByteBuffer(repeating: UInt8(index & 0x7f), count: 160)
            try await client.query(
                "INSERT INTO hot_paths_raw (stream, type, timestamp_us, payload) VALUES (\("account-\(index % 100)"), 'account.modified', \(Int64(index)), \(payload))"
            )
        }
        runner.cancel()
        return appends
    }
    FileHandle.standardError.write(Data("pg-raw: \(Int(Double(checksum) / Date().timeIntervalSince(started))) events/s\n".utf8))
    return (checksum, checksum)
}
