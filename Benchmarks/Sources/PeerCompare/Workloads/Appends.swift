//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation

/// The log-only append workloads: no details table on any side.
enum AppendWorkloads {
    /// Opens a log in `directory`; durable = fsync per commit.
    static func openLog(_ directory: URL, durable: Bool) throws -> EventLog {
        var options = EventLogOptions()
        options.sync = durable ? .durable : .relaxed
        options.initialMapSize = 1 << 30
        return try EventLog(path: directory.appendingPathComponent("log").path, options: options)
    }

    /// `count` realistic `account.details-modified` events with ids from `seed`, for account streams.
    static func sampleEvents(_ count: Int, seed: UInt64) -> [ProposedEvent] {
        (0..<count).map { index in
            Dataset.proposed(Dataset.event(account: index % 1_000, index: 1 + index % 9), id: seed &+ UInt64(index))
        }
    }

    /// 1. Single-event appends, one writer, one event per commit on every side: durable, then
    /// relaxed (no fsync, which shows each back end's own overhead per append). The back ends stay
    /// open and take turns, round by round, so that the disk's moods (these virtual disks vary by
    /// ±30 % from one second to the next) fall on all alike. All three run in this one process.
    static func single(_ scale: Scale, in directory: URL) async throws -> [Figure] {
        var figures: [Figure] = []
        for durable in [true, false] {
            let perRound = durable ? scale.singleDurablePerRound : scale.singleRelaxedPerRound
            let mode = durable ? "durable" : "relaxed"
            let log = try openLog(directory.appendingPathComponent("single-\(mode)-log"), durable: durable)
            let raw = try RawLMDB(directory: directory.appendingPathComponent("single-\(mode)-raw"), durable: durable)
            let sqlite = try SQLitePeer(directory: directory.appendingPathComponent("single-\(mode)-sqlite"), durable: durable)
            // Durable only: raw LMDB writing each record as the log lays it out (chain hash,
            // CRC-32C, event id, versions, metadata), one per durable commit, no index entries:
            // what the log's record format costs the raw loop, apart from the log's own work.
            var layout =
                durable ? try WorkEqualImport.Loop(RawLMDB(directory: directory.appendingPathComponent("single-durable-layout"), durable: true)) : nil
            var layoutWatch = Stopwatch()
            var versions: [String: UInt64] = [:]
            var watches = [Stopwatch(), Stopwatch(), Stopwatch()]
            let stamp = microsecondsNow()
            for round in 0..<scale.singleRounds {
                let first = round * perRound
                let events = sampleEvents(perRound, seed: (durable ? 0x51_0000_0000 : 0x52_0000_0000) &+ UInt64(first))
                let streams = (first..<(first + perRound)).map { "account-\($0 % 100)" }
                let frames = events.indices.map {
                    RawFrame.make(type: events[$0].type, timestamp: stamp, stream: streams[$0], payload: [UInt8](events[$0].payload))
                }
                try await watches[0].timeAsync {
                    for (event, stream) in zip(events, streams) { _ = try await log.append(event, to: stream) }
                }
                try watches[1].time {
                    for (offset, frame) in frames.enumerated() {
                        try raw.write { txn in try raw.putRecord(txn, position: UInt64(first + offset + 1), frame) }
                    }
                }
                try watches[2].time {
                    for (event, stream) in zip(events, streams) { try sqlite.appendBlocking([event], to: stream) }
                }
                if var loop = layout {
                    let items = zip(events, streams).map { event, stream in
                        versions[stream, default: 0] += 1
                        return WorkEqualImport.Item(stream: stream, version: versions[stream]!, event: event)
                    }
                    try layoutWatch.time {
                        for item in items { try loop.raw.write { txn in try loop.putRecordOnly(item, txn: txn) } }
                    }
                    layout = loop
                }
            }
            await log.close()
            let operations = scale.singleRounds * perRound
            // The same frames from one task through the async hand-off: what a log whose appender
            // suspends until a thread of its own committed can reach. A durable log's lone writer
            // must take that way (its flush may not hold a pool thread); a relaxed one need not.
            let handoffFrames = sampleEvents(operations, seed: 0x53_0000_0000).enumerated().map { index, event in
                RawFrame.make(type: event.type, timestamp: stamp, stream: "account-\(index % 100)", payload: [UInt8](event.payload))
            }
            figures.append(try await handoff(writers: 1, perWriter: operations, frames: handoffFrames, durable: durable, in: directory))
            if layout != nil {
                var figure = Figure(
                    "single-durable-layout", "durable append, 1 writer, 1 event/commit: raw loop writing the log's record layout (no index)", .raw,
                    operations: operations, seconds: layoutWatch.seconds)
                figure.sharedProcess = true
                figures.append(figure)
            }
            for (backEnd, watch) in zip(BackEnd.embedded, watches) {
                var figure = Figure(
                    "single-\(mode)", "\(mode) append, 1 writer, 1 event/commit", backEnd, operations: operations, seconds: watch.seconds)
                figure.sharedProcess = true
                figures.append(figure)
            }
        }
        return figures
    }

    /// 2. Durable appends from 1, 8 and 64 concurrent writers, one event per append, each writer
    /// on a stream of its own. The log groups concurrent appends into shared commits; raw LMDB and
    /// SQLite have one writer at a time and commit (and fsync) every append on its own.
    static func group(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        var figures: [Figure] = []
        for (writers, perWriter) in scale.groupWriters {
            let total = writers * perWriter
            let events = sampleEvents(total, seed: 0x60_0000_0000 &+ UInt64(writers) << 24)
            let place = directory.appendingPathComponent("group-\(writers)")
            var watch = Stopwatch()
            switch backEnd {
            case .postgres, .rawPostgres: throw ChildError.notEmbedded(backEnd)
            case .log:
                let log = try openLog(place, durable: true)
                try await watch.timeAsync {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for writer in 0..<writers {
                            group.addTask {
                                for index in 0..<perWriter {
                                    // A fresh default (time-ordered) id, as the account store's appends get.
                                    var event = events[writer * perWriter + index]
                                    event.eventID = EventIDs.timeOrdered()
                                    _ = try await log.append(event, to: "writer-\(writer)")
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                await log.close()
            case .raw:
                let raw = try RawLMDB(directory: place, durable: true)
                // The same events the log appends, each framed for its writer's stream, so that both
                // sides write the same payload bytes.
                let frames = events.enumerated().map { index, event in
                    RawFrame.make(
                        type: event.type, timestamp: microsecondsNow(), stream: "writer-\(index / perWriter)", payload: [UInt8](event.payload))
                }
                try watch.time { try raw.concurrentSingleAppends(writers: writers, perWriter: perWriter, values: frames) }
                // The storage's limit for this many writers: a loop that commits `writers` events
                // per durable transaction (what group commit would reach with perfect groups).
                if writers > 1 {
                    let batched = directory.appendingPathComponent("group-\(writers)-batched")
                    let baseline = try RawLMDB(directory: batched, durable: true)
                    var batchWatch = Stopwatch()
                    try batchWatch.time {
                        for commit in 0..<perWriter {
                            let start = commit * writers
                            try baseline.appendBatch(first: UInt64(start + 1), values: frames[start..<(start + writers)])
                        }
                    }
                    try? FileManager.default.removeItem(at: batched)
                    figures.append(
                        Figure(
                            "group-\(writers)-batched", "durable append, \(writers) events per commit (raw loop, perfect groups)", .raw,
                            operations: total, seconds: batchWatch.seconds))
                    figures.append(try await handoff(writers: writers, perWriter: perWriter, frames: frames, in: directory))
                    let items = events.enumerated().map { index, event in
                        WorkEqualImport.Item(stream: "writer-\(index / perWriter)", version: UInt64(index % perWriter + 1), event: event)
                    }
                    figures.append(try await layoutHandoff(writers: writers, perWriter: perWriter, items: items, in: directory))
                }
            case .sqlite:
                let sqlite = try SQLitePeer(directory: place, durable: true)
                try await watch.timeAsync {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for writer in 0..<writers {
                            group.addTask {
                                for index in 0..<perWriter { try await sqlite.append([events[writer * perWriter + index]], to: "writer-\(writer)") }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
            }
            try? FileManager.default.removeItem(at: place)
            figures.append(
                Figure(
                    "group-\(writers)", "durable append, \(writers) concurrent writer\(writers == 1 ? "" : "s")", backEnd,
                    operations: total, seconds: watch.seconds))
        }
        return figures
    }

    /// The same hand-off, its thread writing each event as the log lays out its record (chain
    /// hash, CRC-32C, event id, versions, metadata; no index entries): what the log's record
    /// itself costs behind the hand-off, apart from the log's other work.
    static func layoutHandoff(writers: Int, perWriter: Int, items: [WorkEqualImport.Item], in directory: URL) async throws -> Figure {
        let id = "group-\(writers)-handoff-layout"
        let place = directory.appendingPathComponent(id)
        let handoff = try RawHandoff(raw: try RawLMDB(directory: place, durable: true), writers: writers, layout: true)
        var watch = Stopwatch()
        try await watch.timeAsync {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in 0..<perWriter { try await handoff.append(.record(items[writer * perWriter + index])) }
                    }
                }
                try await group.waitForAll()
            }
        }
        handoff.finish()
        try? FileManager.default.removeItem(at: place)
        return Figure(
            id, "durable append, \(writers) concurrent writers, async hand-off (raw loop writing the log's record layout)", .raw,
            operations: writers * perWriter, seconds: watch.seconds)
    }

    /// The raw loop's records from `writers` concurrent tasks through ``RawHandoff``: every task
    /// suspends until the durable commit that holds its append, as the log's appenders do.
    static func handoff(writers: Int, perWriter: Int, frames: [[UInt8]], durable: Bool = true, in directory: URL) async throws -> Figure {
        let id = writers == 1 ? "single-\(durable ? "durable" : "relaxed")-handoff" : "group-\(writers)-handoff"
        let place = directory.appendingPathComponent(id)
        let handoff = try RawHandoff(raw: try RawLMDB(directory: place, durable: durable), writers: writers)
        var watch = Stopwatch()
        try await watch.timeAsync {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in 0..<perWriter { try await handoff.append(frames[writer * perWriter + index]) }
                    }
                }
                try await group.waitForAll()
            }
        }
        handoff.finish()
        try? FileManager.default.removeItem(at: place)
        let title =
            writers == 1
            ? "\(durable ? "durable" : "relaxed") append, 1 writer, async hand-off (raw loop, no log work)"
            : "durable append, \(writers) concurrent writers, async hand-off (raw loop, no log work)"
        return Figure(id, title, .raw, operations: writers * perWriter, seconds: watch.seconds)
    }
}
