//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// peer-compare: the same workloads on this project's event log and on a raw LMDB loop, in one
// process run, printed as a table of throughputs and ratios.
//
//   swift run -c release peer-compare [--records N] [--json FILE] [--only single,group,scan]

import EventLog
import Foundation

struct Options {
    var records = 1_000_000
    var jsonPath: String?
    enum Workload: String, CaseIterable { case single, group, scan }
    var workloads = Set(Workload.allCases)

    func only(_ workload: Workload) -> Bool { workloads.contains(workload) }

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--records": records = iterator.next().flatMap(Int.init) ?? records
            case "--json": jsonPath = iterator.next()
            case "--only":
                let names = (iterator.next() ?? "").split(separator: ",").map(String.init)
                let chosen = names.compactMap(Workload.init(rawValue:))
                guard !chosen.isEmpty, chosen.count == names.count else {
                    FileHandle.standardError.write(Data("peer-compare: --only takes a list of \(Workload.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
                    exit(64)
                }
                workloads = Set(chosen)
            case "--help", "-h":
                print("usage: peer-compare [--records N] [--json FILE] [--only single,group,scan]")
                exit(0)
            default:
                FileHandle.standardError.write(Data("peer-compare: unknown argument \(argument)\n".utf8))
                exit(64)
            }
        }
    }
}

let options = Options(CommandLine.arguments)
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

var rows: [(workload: String, ours: Measurement, peer: Measurement)] = []
print("peer-compare on \(machineDescription())")
print("payload \(payload.count) bytes; durable = fsync per commit\n")

// 1. Single-event appends, one writer, one event per commit on both sides: durable, then relaxed
//    (no fsync, which shows the log's own overhead per append).
for durable in options.only(.single) ? [true, false] : [] {
    let count = durable ? 2_000 : 20_000
    let mode = durable ? "durable" : "relaxed"
    let (log, directory) = try openLog("single", durable: durable)
    let ours = try await measure("\(mode) append, 1 event/commit", "EventLog", operations: count) {
        for index in 0..<count { _ = try await log.append(sampleEvent(index), to: "account-\(index % 100)") }
    }
    log.close()
    try? FileManager.default.removeItem(at: directory)
    let rawDirectory = try temporaryDirectory("raw-single")
    let raw = try RawLMDB(directory: rawDirectory, durable: durable)
    let peer = try await measure("\(mode) append, 1 event/commit", "raw LMDB", operations: count) {
        for index in 0..<count { try raw.appendBatch(first: UInt64(index + 1), count: 1, value: payload) }
    }
    try? FileManager.default.removeItem(at: rawDirectory)
    rows.append(("\(mode) append, 1 writer, 1 event/commit", ours, peer))
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
    rows.append(("durable append, \(writers) concurrent writers", ours, peer))
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
    precondition(seen == count * payload.count && viewBytes == seen)
    rows.append(("full scan of \(count) records, copied into RecordedEvent", ours, peer))
    rows.append(("full scan of \(count) records, in place (RecordView)", inPlace, peer))
}

printTable(rows, unit: "records/s")

if let jsonPath = options.jsonPath {
    struct Report: Codable {
        let machine: String
        let rows: [Row]
        struct Row: Codable {
            let workload: String
            let eventLogPerSecond: Double
            let rawLMDBPerSecond: Double
            let ratio: Double
        }
    }
    let report = Report(machine: machineDescription(), rows: rows.map {
        .init(workload: $0.workload, eventLogPerSecond: $0.ours.perSecond, rawLMDBPerSecond: $0.peer.perSecond, ratio: $0.ours.perSecond / $0.peer.perSecond)
    })
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
    print("\nwrote \(jsonPath)")
}
