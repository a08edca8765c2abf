//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation

let payload = samplePayload(size: 300)
let payloadData = Data(payload)

func openLog(_ name: String, durable: Bool) throws -> (EventLog, URL) {
    let directory = try temporaryDirectory(name)
    var logOptions = EventLogOptions()
    logOptions.sync = durable ? .durable : .relaxed
    logOptions.initialMapSize = 8 << 30
    return (try EventLog(path: directory.appendingPathComponent("log").path, options: logOptions), directory)
}

func sampleEvent(_ index: Int) -> ProposedEvent {
    ProposedEvent(type: "account.details-modified", metadata: EventMetadata(actor: "bench"), payload: payloadData)
}

/// One workload's figures on the three back ends: this project's log, raw LMDB and SQLite.
typealias ComparisonRow = (workload: String, ours: Measurement, peer: Measurement, sqlite: Measurement)

/// The workloads. Not on the main actor (as top-level code is), so that the awaits inside them do
/// not hop threads: all back ends run on the same executor.
enum Workloads {
    static func run(_ options: Options) async throws -> [ComparisonRow] {
        var rows: [ComparisonRow] = []
        // 1. Single-event appends, one writer, one event per commit on every side: durable, then relaxed
        //    (no fsync, which shows the log's own overhead per append).
        // The back ends stay open and take turns, round by round, so that the disk's moods (these
        // virtual disks vary by ±30 % from one second to the next) fall on all alike.
        for durable in options.only(.single) ? [true, false] : [] {
            let rounds = 10
            let perRound = durable ? 200 : 2_000
            let mode = durable ? "durable" : "relaxed"
            let (log, directory) = try openLog("single", durable: durable)
            let rawDirectory = try temporaryDirectory("raw-single")
            let raw = try RawLMDB(directory: rawDirectory, durable: durable)
            let sqliteDirectory = try temporaryDirectory("sqlite-single")
            let sqlite = try SQLitePeer(directory: sqliteDirectory, durable: durable)
            var ours = Measurement(workload: mode, backEnd: "EventLog", operations: 0, seconds: 0)
            var peer = Measurement(workload: mode, backEnd: "raw LMDB", operations: 0, seconds: 0)
            var lite = Measurement(workload: mode, backEnd: "SQLite", operations: 0, seconds: 0)
            for round in 0..<rounds {
                let first = round * perRound
                ours = ours + (try await measure(mode, "EventLog", operations: perRound) {
                    for index in first..<(first + perRound) { _ = try await log.append(sampleEvent(index), to: "account-\(index % 100)") }
                })
                peer = peer + (try await measure(mode, "raw LMDB", operations: perRound) {
                    for index in first..<(first + perRound) { try raw.appendBatch(first: UInt64(index + 1), count: 1, value: payload) }
                })
                lite = lite + (try await measure(mode, "SQLite", operations: perRound) {
                    for index in first..<(first + perRound) { try await sqlite.append([sampleEvent(index)], to: "account-\(index % 100)") }
                })
            }
            log.close()
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: rawDirectory)
            try? FileManager.default.removeItem(at: sqliteDirectory)
            rows.append(("\(mode) append, 1 writer, 1 event/commit", ours, peer, lite))
        }

        // 2. Durable appends from 1, 8 and 64 concurrent writers (the log groups them into shared commits).
        for (writers, perWriter) in !options.only(.group) ? [] : [(1, 2_000), (8, 500), (64, 100)] {
            let total = writers * perWriter
            let (log, directory) = try openLog("group-\(writers)", durable: true)
            let ours = try await measure("group commit \(writers)", "EventLog", operations: total) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for index in 0..<perWriter { _ = try await log.append(sampleEvent(index), to: "writer-\(writer)") }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            log.close()
            try? FileManager.default.removeItem(at: directory)
            let rawDirectory = try temporaryDirectory("raw-group-\(writers)")
            let raw = try RawLMDB(directory: rawDirectory, durable: true)
            let peer = try await measure("group commit \(writers)", "raw LMDB", operations: total) {
                try raw.concurrentSingleAppends(writers: writers, perWriter: perWriter, value: payload)
            }
            try? FileManager.default.removeItem(at: rawDirectory)
            // SQLite: N tasks, each appending one event per transaction through one pool.
            let sqliteDirectory = try temporaryDirectory("sqlite-group-\(writers)")
            let sqlite = try SQLitePeer(directory: sqliteDirectory, durable: true)
            let lite = try await measure("group commit \(writers)", "SQLite", operations: total) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for index in 0..<perWriter { try await sqlite.append([sampleEvent(index)], to: "writer-\(writer)") }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            try? FileManager.default.removeItem(at: sqliteDirectory)
            rows.append(("durable append, \(writers) concurrent writers", ours, peer, lite))
        }

        // 3. Full scan: read (and, for the log, check and decode) every record.
        if options.only(.scan) {
            let count = options.records
            let (log, directory) = try openLog("scan", durable: false)
            var appended = 0
            while appended < count {
                let batch = min(1_000, count - appended)
                _ = try await log.append((0..<batch).map { sampleEvent(appended + $0) }, to: "account-\(appended / 1_000)")
                appended += batch
            }
            var seen = 0
            let ours = try await measure("scan", "EventLog", operations: count) {
                try log.replay(batchSize: 4_096) { record in
                    seen &+= record.payload.count
                    return true
                }
            }
            var viewBytes = 0
            let inPlace = try await measure("scan", "EventLog", operations: count) {
                try log.scan { record in
                    viewBytes &+= record.payload.count
                    return true
                }
            }
            log.close()
            try? FileManager.default.removeItem(at: directory)
            let rawDirectory = try temporaryDirectory("raw-scan")
            let raw = try RawLMDB(directory: rawDirectory, durable: false)
            var first = 1
            while first <= count {
                let batch = min(1_000, count - first + 1)
                try raw.appendBatch(first: UInt64(first), count: batch, value: payload)
                first += batch
            }
            let peer = try await measure("scan", "raw LMDB", operations: count) {
                let result = try raw.scan()
                precondition(result.records == count)
            }
            try? FileManager.default.removeItem(at: rawDirectory)
            // SQLite: the same records, 1,000 per transaction on 1,000-event streams, then read back
            // decoded into a struct (and, for the in-place row, without a struct or a payload copy).
            let sqliteDirectory = try temporaryDirectory("sqlite-scan")
            let sqlite = try SQLitePeer(directory: sqliteDirectory, durable: false)
            appended = 0
            while appended < count {
                let batch = min(1_000, count - appended)
                try await sqlite.append((0..<batch).map { sampleEvent(appended + $0) }, to: "account-\(appended / 1_000)")
                appended += batch
            }
            var liteBytes = 0
            let lite = try await measure("scan", "SQLite", operations: count) {
                let result = try await sqlite.scan()
                precondition(result.records == count)
                liteBytes = result.payloadBytes
            }
            var liteInPlaceBytes = 0
            let liteInPlace = try await measure("scan", "SQLite", operations: count) {
                let result = try await sqlite.scanInPlace()
                precondition(result.records == count)
                liteInPlaceBytes = result.payloadBytes
            }
            try? FileManager.default.removeItem(at: sqliteDirectory)
            precondition(seen == count * payload.count && viewBytes == seen && liteBytes == seen && liteInPlaceBytes == seen)
            rows.append(("full scan of \(count) records, copied into RecordedEvent", ours, peer, lite))
            rows.append(("full scan of \(count) records, in place (RecordView)", inPlace, peer, liteInPlace))
        }
        return rows
    }
}
