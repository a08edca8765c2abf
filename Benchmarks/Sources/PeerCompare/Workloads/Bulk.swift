//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LogRecordFormat
import SpeziAccountStore

/// The 1 M-event data set: written once per back end (relaxed bulk append, timed), then read back
/// (full replay), then folded (rebuild) and read (point reads) by later child processes.
enum BulkWorkloads {
    /// Where each back end keeps the data set inside its chain directory.
    static func logPath(_ directory: URL) -> URL { directory.appendingPathComponent("log") }
    static func rawPath(_ directory: URL) -> URL { directory.appendingPathComponent("raw") }
    static func sqlitePath(_ directory: URL) -> URL { directory.appendingPathComponent("sqlite") }

    static func openLog(_ directory: URL) throws -> EventLog {
        var options = EventLogOptions()
        options.sync = .relaxed
        options.initialMapSize = 2 << 30
        return try EventLog(path: logPath(directory).path, options: options)
    }

    /// 3. Relaxed bulk append: every account's ten events in two commits of five (`Dataset`), no
    /// fsync on any side. Only the append calls are timed, not making the events.
    static func bulk(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        let accounts = scale.accounts
        let per = Dataset.eventsPerCommit
        var watch = Stopwatch()
        var log: EventLog?
        var raw: RawLMDB?
        var sqlite: SQLitePeer?
        switch backEnd {
        case .postgres, .rawPostgres: throw ChildError.notEmbedded(backEnd)
        case .log: log = try openLog(directory)
        case .raw: raw = try RawLMDB(directory: rawPath(directory), sync: .relaxed)
        case .sqlite: sqlite = try SQLitePeer(directory: sqlitePath(directory), sync: .off)
        }
        var position: UInt64 = 0
        for round in 0..<(Dataset.eventsPerAccount / per) {
            for account in 0..<accounts {
                let stream = Dataset.accountId(account)
                let indexes = (round * per)..<(round * per + per)
                let events = indexes.map { Dataset.event(account: account, index: $0) }
                let expected: ExpectedVersion = round == 0 ? .noStream : .exact(UInt64(round * per))
                if let raw {
                    let stamp = microsecondsNow()
                    let frames = events.map { RawFrame.make(type: $0.typeName, timestamp: stamp, stream: stream, payload: $0.encodedPayload()) }
                    try watch.time {
                        try raw.write { txn in
                            for frame in frames {
                                position += 1
                                try raw.putRecord(txn, position: position, frame)
                            }
                        }
                    }
                    continue
                }
                let proposed = zip(indexes, events).map { Dataset.proposed($1, id: UInt64(account * Dataset.eventsPerAccount + $0 + 1)) }
                if let log {
                    _ = try await watch.timeAsync { try await log.append(proposed, to: stream, expectedVersion: expected) }
                } else if let sqlite {
                    _ = try watch.time { try sqlite.appendBlocking(proposed, to: stream, expectedVersion: expected) }
                }
            }
        }
        await log?.close()
        var figures = [
            Figure(
                "bulk", "relaxed bulk append of \(count(scale.records)) events, 5 per commit", backEnd, operations: scale.records,
                seconds: watch.seconds)
        ]
        if backEnd != .sqlite {
            let target = directory.appendingPathComponent("import")
            defer { try? FileManager.default.removeItem(at: target) }
            figures.append(try await importing(scale, backEnd, into: target))
        }
        if backEnd == .raw {
            // Issue 43's peer for the import row: the same import, doing the log's work. Its
            // records (in the log's layout) stay for the replay step's same-bytes scan.
            figures.append(try WorkEqualImport.importing(scale, into: WorkEqualImport.directory(in: directory)))
        }
        return figures
    }

    /// 3b. Import: the same data set written again into a fresh store as an import writes it, 400
    /// appends (2,000 events) per `appendBatch` call, which the log commits together; the raw loop
    /// commits the same 2,000 events per transaction. Only the calls are timed, and the log's
    /// close, which writes the index entries the last commits left. `target` is the log's folder
    /// (the raw loop's with `.raw`).
    static func importing(_ scale: Scale, _ backEnd: BackEnd, into target: URL) async throws -> Figure {
        let appendsPerCall = 400
        var watch = Stopwatch()
        let log = backEnd == .log ? try openLog(target) : nil
        let raw = backEnd == .raw ? try RawLMDB(directory: target, sync: .relaxed) : nil
        var position: UInt64 = 0
        for round in 0..<(Dataset.eventsPerAccount / Dataset.eventsPerCommit) {
            for first in stride(from: 0, to: scale.accounts, by: appendsPerCall) {
                let accounts = first..<min(first + appendsPerCall, scale.accounts)
                let indexes = (round * Dataset.eventsPerCommit)..<((round + 1) * Dataset.eventsPerCommit)
                if let raw {
                    let stamp = microsecondsNow()
                    let frames = accounts.flatMap { account in
                        indexes.map { index in
                            let event = Dataset.event(account: account, index: index)
                            return RawFrame.make(
                                type: event.typeName, timestamp: stamp, stream: Dataset.accountId(account), payload: event.encodedPayload())
                        }
                    }
                    try watch.time {
                        try raw.write { txn in
                            for frame in frames {
                                position += 1
                                try raw.putRecord(txn, position: position, frame)
                            }
                        }
                    }
                } else if let log {
                    let appends = accounts.map { account in
                        StreamAppend(
                            streamID: Dataset.accountId(account),
                            events: indexes.map {
                                Dataset.proposed(Dataset.event(account: account, index: $0), id: UInt64(account * Dataset.eventsPerAccount + $0 + 1))
                            },
                            expectedVersion: round == 0 ? .noStream : .exact(UInt64(indexes.lowerBound)))
                    }
                    let outcomes = await watch.timeAsync { await log.appendBatch(appends) }
                    for outcome in outcomes { _ = try outcome.get() }
                }
            }
        }
        if let log { await watch.timeAsync { await log.close() } }
        return Figure(
            "import", "import of \(count(scale.records)) events, 2,000 per commit (400 appends per call)", backEnd, operations: scale.records,
            seconds: watch.seconds)
    }

    /// A number that uses the decoded event, so that decoding cannot be left out.
    @inline(__always)
    static func weight(_ event: AccountEvent) -> Int {
        switch event {
        case let .accountCreated(userId, _, _, values): userId.utf8.count &+ values.count
        case let .detailsModified(modified, removed): modified.count &+ removed.count
        default: 1
        }
    }

    /// What a replay reads of each event through a view: its kind, a signup's user id, and every
    /// value's identifier and length (in place, nothing copied).
    @inline(__always)
    static func weight(_ view: AccountEventView) -> Int {
        var sum = Int(view.kind.rawValue) &+ 1
        if view.kind == .accountCreated { sum &+= view.userId?.utf8.count ?? 0 }
        view.values.forEachEntry { identifier, value in sum &+= identifier.count &+ value.count }
        return sum
    }

    /// 4. Full replay: read every event and check its payload with the store's decoder. The log
    /// reads in place (`scan`: checksum and layout checked, nothing copied); raw LMDB walks a
    /// cursor; SQLite steps a prepared SELECT, the payload read in place. Rows: the storage alone
    /// (payloads not looked at); each payload read through an `AccountEventView` (checked in place,
    /// the fields `weight` reads taken from its bytes); each payload decoded into an `AccountEvent`
    /// (every value materialized); and (log and SQLite) each record copied into a struct with its
    /// metadata decoded, then decoded. Every back end first reads the whole data set once, untimed,
    /// so that no row pays for mapping (LMDB) or caching (SQLite) the file's pages.
    static func replay(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        var bare = Stopwatch()
        var bareBytes = 0
        // Raw LMDB only: the same walk, each frame's every byte read through the log's CRC-32C
        // routine, as the log's scan reads each record to check it.
        var checked = Stopwatch()
        var checkedSum: UInt32 = 0
        // Raw LMDB only: the same checked walk over records in the log's own layout (the
        // work-equal import's), so that both sides read the same bytes.
        var sameBytes: Figure?
        var viewed = Stopwatch()
        var decoded = Stopwatch()
        var copied = Stopwatch()
        var viewTotal = 0
        var total = 0
        var copiedTotal = 0
        var viewRecords = 0
        var records = 0
        var copiedRecords = 0
        switch backEnd {
        case .postgres, .rawPostgres: throw ChildError.notEmbedded(backEnd)
        case .log:
            let log = try openLog(directory)
            func bareScan() throws -> Int {
                var bytes = 0
                try log.scan { record in
                    bytes &+= record.payload.count
                    return true
                }
                return bytes
            }
            _ = try bareScan()
            bareBytes = try bare.time { try bareScan() }
            try viewed.time {
                try log.scan { record in
                    guard let kind = AccountEvent.Kind(nameBytes: record.typeBytes) else {
                        throw PayloadDecodingError.unknownEventType(record.type)
                    }
                    viewTotal &+= weight(try AccountEventView(kind, payload: record.payload))
                    viewRecords += 1
                    return true
                }
            }
            try decoded.time {
                try log.scan { record in
                    total &+= weight(try AccountEvent.decode(type: record.type, payload: record.payload))
                    records += 1
                    return true
                }
            }
            try copied.time {
                try log.replay(batchSize: 4_096) { record in
                    copiedTotal &+=
                        weight(try record.payload.withUnsafeBytes { try AccountEvent.decode(type: record.type, payload: $0) })
                        &+ record.metadata.extra.count
                    copiedRecords += 1
                    return true
                }
            }
            await log.close()
        case .raw:
            let raw = try RawLMDB(directory: rawPath(directory), sync: .relaxed)
            func bareScan() throws -> Int {
                var bytes = 0
                _ = try raw.read { txn in try raw.forEachRecord(txn, after: 0) { _, record in bytes &+= RawFrame.View(record).payload.count } }
                return bytes
            }
            _ = try bareScan()
            bareBytes = try bare.time { try bareScan() }
            _ = try checked.time {
                try raw.read { txn in try raw.forEachRecord(txn, after: 0) { _, record in checkedSum ^= CRC32C.checksum(record) } }
            }
            sameBytes = try WorkEqualImport.checkedScan(in: directory)
            let kinds = Dataset.typeNames.map { AccountEvent.Kind(name: $0) }
            try viewed.time {
                viewRecords = try raw.read { txn in
                    try raw.forEachRecord(txn, after: 0) { _, bytes in
                        guard let kind = kinds[Int(bytes[0])] else { throw PayloadDecodingError.unknownEventType(RawFrame.View(bytes).type) }
                        viewTotal &+= weight(try AccountEventView(kind, payload: RawFrame.View(bytes).payload))
                    }
                }
            }
            try decoded.time {
                records = try raw.read { txn in
                    try raw.forEachRecord(txn, after: 0) { _, bytes in
                        let view = RawFrame.View(bytes)
                        total &+= weight(try AccountEvent.decode(type: view.type, payload: view.payload))
                    }
                }
            }
        case .sqlite:
            let sqlite = try SQLitePeer(directory: sqlitePath(directory), sync: .off)
            _ = try sqlite.payloadBytes()
            bareBytes = try bare.time { try sqlite.payloadBytes() }
            try viewed.time {
                viewRecords = try sqlite.replayViews { _, view in viewTotal &+= weight(view) }
            }
            try decoded.time {
                records = try sqlite.replay { _, event in total &+= weight(event) }
            }
            try copied.time {
                copiedRecords = try sqlite.replayCopied { row, event in copiedTotal &+= weight(event) &+ row.metadata.extra.count }
            }
        }
        precondition(records == scale.records, "\(backEnd.title) replayed \(records) of \(scale.records) events")
        precondition(viewRecords == scale.records, "\(backEnd.title) viewed \(viewRecords) of \(scale.records) events")
        precondition(total > 0 && viewTotal > total)
        precondition(bareBytes > scale.records)
        var figures = [
            Figure("scan", "full scan of \(count(scale.records)) events, payloads not decoded", backEnd, operations: records, seconds: bare.seconds),
            Figure(
                "replay", "full replay of \(count(scale.records)) events, read in place (views)", backEnd, operations: viewRecords,
                seconds: viewed.seconds),
            Figure(
                "replay-decoded", "full replay of \(count(scale.records)) events, decoded in place (every value)", backEnd, operations: records,
                seconds: decoded.seconds)
        ]
        if backEnd == .raw {
            precondition(checkedSum != 0 || records == 0)
            figures.insert(
                Figure(
                    "scan-checked", "full scan of \(count(scale.records)) events, every byte read (raw loop: CRC-32C of each frame)", backEnd,
                    operations: records, seconds: checked.seconds), at: 1)
            if let sameBytes { figures.insert(sameBytes, at: 2) }
        } else if backEnd == .log {
            // The log's scan checks every record's CRC: the same figure, beside raw LMDB's checked walk.
            figures.insert(
                Figure(
                    "scan-checked", "full scan of \(count(scale.records)) events, every byte read (raw loop: CRC-32C of each frame)", backEnd,
                    operations: records, seconds: bare.seconds), at: 1)
        }
        if backEnd != .raw {
            precondition(copiedRecords == scale.records && copiedTotal >= total)
            figures.append(
                Figure(
                    "replay-copied", "full replay of \(count(scale.records)) events, copied, then decoded", backEnd,
                    operations: copiedRecords, seconds: copied.seconds))
        }
        return figures
    }
}

/// 1000000 → "1 M", 20000 → "20 k".
func count(_ number: Int) -> String {
    if number >= 1_000_000, number % 1_000_000 == 0 { return "\(number / 1_000_000) M" }
    if number >= 1_000, number % 1_000 == 0 { return "\(number / 1_000) k" }
    return "\(number)"
}
