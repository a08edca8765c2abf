//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// The hot paths of replay, rebuild, import and point reads, one per run, for instruction-count
// profiles under valgrind's callgrind (which counts the same on a busy machine as on a quiet one):
//
//   swift build -c release --product hot-paths
//   objcopy --strip-debug .build/release/hot-paths /tmp/hot-paths   # valgrind 3.19 cannot read Swift 6.3's DWARF
//   valgrind --tool=callgrind /tmp/hot-paths replay DIR
//
// `streams` reads the log stream by stream (as a stream-ordered rebuild does) and decodes each
// payload. `rebuild` builds the details table (a first build), then rebuilds it. `open-store`
// opens the log and its built details table COUNT times (default 5), each until caught up, and
// prints each open's time (run it under `strace -f -T` to see where an open waits).
// `single` appends COUNT events (default 20,000) one per relaxed commit into DIR/single.
// `group` appends from 64 durable writers (HOT_PATHS_WRITERS sets how many) into DIR/group and
// prints events/s; it waits on the disk, so time it with `perf stat -e task-clock` or `perf record`
// rather than count instructions.
// `pg-single URL [COUNT]` appends COUNT events one at a time (durable) to the PostgreSQL log at
// URL (`postgres://user@host:port/db?schema=name`), as peer-compare's pg-single row does;
// `pg-replay URL [COUNT]` replays it (importing COUNT events first when it holds fewer).
//
// `import` prints the bytes the process wrote (`wchar` of /proc/self/io) beside its rate; the
// environment variable HOT_PATHS_INDEX_TAIL_LIMIT sets the logs' `indexTailLimit` to compare flush sizes,
// HOT_PATHS_BULK_TAIL_LIMIT their `bulkIndexTailLimit`, and HOT_PATHS_IDLE_FLUSH_MS their
// `idleIndexFlushDelay` (set it high under valgrind, where the writer idles between batches).
//
// DIR is a data directory that `peer-compare` wrote (its `log` folder is read; `rebuild` and
// `details` also write `projections` beside it). The main thread never parks in `dispatchMain`
// (callgrind 3.19 crashes there): async work runs in a task the main thread waits for.

import Dispatch
import EventLog
import EventLogProtocol
import Foundation
import Projections
import SpeziAccountStore
import Synchronization

let usage =
    "usage: hot-paths scan|replay|view|streams|fold|rebuild|open-store|import|single|group|details|verify DIR [COUNT] | server-read|server-mix|server-login DIR [COUNT] | pg-single|pg-replay URL [COUNT] | pg-raw PORT [COUNT]"
let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("\(usage)\n".utf8))
    exit(64)
}
let mode = arguments[1]
let directory = URL(fileURLWithPath: arguments[2])
let limit = arguments.count > 3 ? Int(arguments[3]) ?? .max : .max

/// Runs `body` to the end on the cooperative pool while this thread waits.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<T, any Error>?>(nil)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

func openLog(_ path: URL, readOnly: Bool = false) throws -> EventLog {
    var options = EventLogOptions()
    // HOT_PATHS_DURABLE=1: an fdatasync per commit (the durable single row).
    options.sync = ProcessInfo.processInfo.environment["HOT_PATHS_DURABLE"] == "1" ? .durable : .relaxed
    options.initialMapSize = 2 << 30
    if let limit = ProcessInfo.processInfo.environment["HOT_PATHS_INDEX_TAIL_LIMIT"].flatMap(Int.init) { options.indexTailLimit = limit }
    if let limit = ProcessInfo.processInfo.environment["HOT_PATHS_BULK_TAIL_LIMIT"].flatMap(Int.init) { options.bulkIndexTailLimit = limit }
    if let delay = ProcessInfo.processInfo.environment["HOT_PATHS_IDLE_FLUSH_MS"].flatMap(Int.init) {
        options.idleIndexFlushDelay = .milliseconds(delay)
    }
    return try EventLog(path: path.path, options: options)
}

/// The first `count` records of the log at `path`, as events to append again.
func proposedEvents(from path: URL, count: Int) throws -> [ProposedEvent] {
    var events: [ProposedEvent] = []
    try openLog(path).scan { record in
        events.append(
            ProposedEvent(
                eventID: record.eventID, type: record.type, schemaVersion: record.schemaVersion, metadata: record.metadata,
                payload: Data(record.payload)))
        return events.count < count
    }
    return events
}

/// The details table at `path` beside `log`, with no read-your-writes deadline (under valgrind a
/// first build takes minutes).
@Sendable func openDetailsTable(_ path: String, log: EventLog) throws -> ProjectionStore {
    var options = ProjectionStoreOptions()
    options.readYourWritesTimeout = .seconds(3_600)
    return try ProjectionStore(path: path, log: log, projections: [AccountDetailsProjection()], options: options)
}

/// Runs the chosen path; locals, not globals, so that no access to a global is checked in the loops.
func run() throws -> (count: Int, checksum: Int) {
    var checksum = 0
    var count = 0
    let logPath = directory.appendingPathComponent("log")
    switch mode {
    case "scan":
        let log = try openLog(logPath)
        try log.scan { record in
            checksum &+= record.payload.count
            count += 1
            return count < limit
        }
    case "replay":
        let log = try openLog(logPath)
        try log.scan { record in
            if case let .detailsModified(modified, _) = try AccountEvent.decode(type: record.type, payload: record.payload) {
                checksum &+= modified.count
            }
            count += 1
            return count < limit
        }
    case "view":
        // The same records read through views: checked in place, each entry's identifier and
        // value length read without a copy.
        let log = try openLog(logPath)
        try log.scan { record in
            guard let kind = AccountEvent.Kind(nameBytes: record.typeBytes) else { throw PayloadDecodingError.unknownEventType(record.type) }
            let view = try AccountEventView(kind, payload: record.payload)
            view.values.forEachEntry { identifier, value in checksum &+= identifier.count &+ value.count }
            count += 1
            return count < limit
        }
    case "streams":
        // The records stream by stream (the streams index, each record looked up by position),
        // each payload decoded, as a stream-ordered rebuild reads them.
        let log = try openLog(logPath)
        let through = try log.streamOrderLimit()
        try log.scanStreams(after: nil, through: through) { record in
            if case let .detailsModified(modified, _) = try AccountEvent.decode(type: record.type, payload: record.payload) {
                checksum &+= modified.count
            }
            count += 1
            return true
        }
    case "verify":
        // The whole log's checksums, chain and indexes, as `verify` does them; prints records/s.
        let log = try openLog(logPath)
        let started = Date()
        let report = try log.verifyBlocking()
        guard report.isIntact else { throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "\(report.problem!)"]) }
        count = Int(report.recordsChecked)
        checksum = report.headHash.description.count
        FileHandle.standardError.write(Data("verify: \(Int(Double(count) / Date().timeIntervalSince(started))) records/s\n".utf8))
    case "fold":
        // The CPU side of a rebuild without the projection store: decode, fold, encode every 4,096 events.
        let log = try openLog(logPath)
        var states: [String: AccountState] = [:]
        var touched: Set<String> = []
        try log.scan { record in
            let event = try AccountEvent.decode(type: record.type, payload: record.payload)
            let id = record.streamID
            if let next = AccountState.applying(event, to: states[id], accountId: id, version: record.streamVersion, at: record.timestamp) {
                states[id] = next
                touched.insert(id)
            }
            count += 1
            if count % 4_096 == 0 {
                for id in touched { checksum &+= states[id]!.encoded().count }
                touched.removeAll(keepingCapacity: true)
            }
            return count < limit
        }
    case "rebuild":
        let projectionsPath = directory.appendingPathComponent("projections").path
        let log = try openLog(logPath)
        let last = try log.lastPosition()
        count = Int(last)
        try blocking {
            let store = try openDetailsTable(projectionsPath, log: log)
            try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: last)
            try await store.rebuild(AccountDetailsProjection.projectionName)
            await store.close()
        }
    case "open-store":
        // Opens the log and its built details table COUNT times (default 5), each until caught up,
        // and prints each open's time: what `peer-compare --scale` reports as open-store.
        let opens = limit == .max ? 5 : limit
        let projectionsPath = directory.appendingPathComponent("projections").path
        for _ in 0..<opens {
            let started = DispatchTime.now().uptimeNanoseconds
            let log = try openLog(logPath)
            try blocking {
                let store = try openDetailsTable(projectionsPath, log: log)
                try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: try log.lastPosition())
                let opened = DispatchTime.now().uptimeNanoseconds
                FileHandle.standardError.write(Data("open-store: \(Double(opened - started) / 1e6) ms\n".utf8))
                await store.close()
                await log.close()
            }
            count += 1
        }
    case "import":
        // Copies the log into DIR/import, five events per append (the data set's commits), as an import does.
        let source = try openLog(logPath)
        // A fresh copy each run (into a copy that holds them, every append would be a retry).
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("import"))
        let target = try openLog(directory.appendingPathComponent("import"))
        var pending: [(String, [ProposedEvent], UInt64)] = []
        var current: (stream: String, events: [ProposedEvent], first: UInt64)?
        try source.scan { record in
            let proposed = ProposedEvent(
                eventID: record.eventID, type: record.type, schemaVersion: record.schemaVersion, metadata: record.metadata,
                payload: Data(record.payload))
            if let open = current, open.stream == record.streamID, open.events.count < 5 {
                current!.events.append(proposed)
            } else {
                if let open = current { pending.append((open.stream, open.events, open.first)) }
                current = (record.streamID, [proposed], record.streamVersion)
            }
            count += 1
            return count < limit
        }
        if let open = current { pending.append((open.stream, open.events, open.first)) }
        // Appends of 400 streams (2,000 events) per call, as LogTransfer's import sends them.
        let appends = pending.map { stream, events, first in
            StreamAppend(streamID: stream, events: events, expectedVersion: first == 1 ? .noStream : .exact(first - 1))
        }
        let started = Date()
        checksum = try blocking {
            var written = 0
            for start in stride(from: 0, to: appends.count, by: 400) {
                for outcome in await target.appendBatch(Array(appends[start..<min(start + 400, appends.count)])) {
                    written += try outcome.get().positions.count
                }
            }
            // Closing writes the tail the last commits left into the indexes: part of the import.
            await target.close()
            return written
        }
        let written = (try? String(contentsOfFile: "/proc/self/io", encoding: .utf8))?.split(separator: "\n").first { $0.hasPrefix("wchar") } ?? ""
        FileHandle.standardError.write(Data("import: \(Int(Double(checksum) / Date().timeIntervalSince(started))) events/s, \(written)\n".utf8))
    case "single":
        // Relaxed single appends (peer-compare's relaxed single row): COUNT events, one per append
        // and commit, from one writer, into DIR/single. No fsync: what is left is the log's own work
        // (with HOT_PATHS_DURABLE=1, the durable row's: an fdatasync per commit).
        let events = try proposedEvents(from: logPath, count: limit == .max ? 20_000 : limit)
        let target = directory.appendingPathComponent("single")
        try? FileManager.default.removeItem(at: target)
        let log = try openLog(target)
        let batch = events
        let started = Date()
        checksum = try blocking {
            var written = 0
            for (index, event) in batch.enumerated() {
                written += try await log.append(event, to: "account-\(index % 100)").positions.count
            }
            return written
        }
        FileHandle.standardError.write(Data("single: \(Int(Double(checksum) / Date().timeIntervalSince(started))) events/s\n".utf8))
        log.close()
        count = checksum
    case "group":
        // 64 durable writers, one event per append, each on a stream of its own (peer-compare's
        // group row): COUNT appends per writer, the events taken from the data set.
        let writers = ProcessInfo.processInfo.environment["HOT_PATHS_WRITERS"].flatMap(Int.init) ?? 64
        let perWriter = limit == .max ? 200 : limit
        let events = try proposedEvents(from: logPath, count: writers * perWriter)
        let target = directory.appendingPathComponent("group")
        try? FileManager.default.removeItem(at: target)
        var options = EventLogOptions()
        options.sync = .durable
        let log = try EventLog(path: target.path, options: options)
        let batch = events
        let started = Date()
        checksum = try blocking {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var written = 0
                        for index in 0..<perWriter {
                            var event = batch[writer * perWriter + index]
                            event.eventID = EventIDs.timeOrdered()
                            written += try await log.append(event, to: "writer-\(writer)").positions.count
                        }
                        return written
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        FileHandle.standardError.write(Data("group: \(Int(Double(checksum) / Date().timeIntervalSince(started))) events/s\n".utf8))
        log.close()
        count = checksum
    case "pg-single": (count, checksum) = try postgresSingle(arguments, limit: limit)
    case "pg-replay": (count, checksum) = try postgresReplay(arguments, limit: limit)
    case "pg-raw": (count, checksum) = try postgresRaw(arguments, limit: limit)
    case "details":
        let ids: [String] = try {
            let log = try openLog(logPath)
            var seen: [String] = []
            try log.scan { record in
                if record.streamVersion == 1 { seen.append(record.streamID) }
                return seen.count < 1_000
            }
            return seen
        }()
        let reads = limit == .max ? 100_000 : limit
        checksum = try blocking {
            var options = AccountStoreOptions()
            options.sync = .relaxed
            let store = try await AccountStore(directory: directory.path, options: options)
            var found = 0
            for index in 0..<reads where try store.details(of: ids[index % ids.count]) != nil { found += 1 }
            await store.close()
            return found
        }
        count = reads
    case "server-login":
        // Sign-ins through the account server's routes in process (ServerRoutes.swift): COUNT of
        // them over 8 accounts, on a durable store with test hashing; DIR is the store's folder.
        let requests = limit == .max ? 200 : limit
        checksum = try blocking { try await serverLogins(in: directory, requests: requests) }
        count = requests
    case "server-read", "server-mix":
        // The account server's routes in process (ServerRoutes.swift): COUNT requests, every fifth
        // a PATCH in server-mix; DIR is the store's folder (replaced).
        let requests = limit == .max ? 2_000 : limit
        let patchEvery = mode == "server-mix" ? 5 : 0
        checksum = try blocking { try await serverRoutes(in: directory, requests: requests, patchEvery: patchEvery) }
        count = requests
    default:
        FileHandle.standardError.write(Data("\(usage)\n".utf8))
        exit(64)
    }
    return (count, checksum)
}

let (count, checksum) = try run()
print("\(mode): \(count) records, checksum \(checksum)")
