//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// peer-compare: the same workloads on this project's event log, on a raw LMDB loop and on SQLite
// (through GRDB), in one process run, printed as a table of throughputs and ratios.
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
print("peer-compare on \(machineDescription())")
print("payload \(samplePayload(size: 300).count) bytes; durable = fsync per commit (SQLite: WAL, synchronous=FULL; relaxed: synchronous=OFF)\n")
let rows = try await Workloads.run(options)

printTable(rows, unit: "records/s")

if let jsonPath = options.jsonPath {
    struct Report: Codable {
        let machine: String
        let rows: [Row]
        struct Row: Codable {
            let workload: String
            let eventLogPerSecond: Double
            let rawLMDBPerSecond: Double
            let sqlitePerSecond: Double
            /// EventLog / raw LMDB.
            let ratio: Double
            /// EventLog / SQLite.
            let ratioToSQLite: Double
        }
    }
    let report = Report(machine: machineDescription(), rows: rows.map {
        .init(workload: $0.workload, eventLogPerSecond: $0.ours.perSecond, rawLMDBPerSecond: $0.peer.perSecond, sqlitePerSecond: $0.sqlite.perSecond,
              ratio: $0.ours.perSecond / $0.peer.perSecond, ratioToSQLite: $0.ours.perSecond / $0.sqlite.perSecond)
    })
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
    print("\nwrote \(jsonPath)")
}
