//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// The command line.
struct Options {
    enum Workload: String, CaseIterable {
        case single, group, bulk, replay, rebuild, point, mix, postgres
        /// Run only by `--scale` (in its child processes), never by default.
        case scale

        static let table: [Workload] = [.single, .group, .bulk, .replay, .rebuild, .point, .mix, .postgres]
    }

    var records: Int?
    var quick = false
    var jsonPath: String?
    /// `--rounds`: how often the whole set runs, this project and its peers in turn each round.
    var rounds = 5
    var workloads = Set(Workload.table)
    /// `--scale`: the sizes whose costs are compared, instead of the tables.
    var scaleSizes: [Int]?
    /// Set in a child process: what to run, on which back end, where, and where to put the figures.
    var child: (workload: Workload, backEnd: BackEnd?, directory: URL, result: URL)?

    static let usage = """
        usage: peer-compare [--records N] [--quick] [--rounds N] [--json FILE] [--only single,group,bulk,replay,rebuild,point,mix,postgres]
               peer-compare --scale [SIZES]

          --records N   events in the data set of bulk, replay, rebuild and point (default 1000000; 10 per account)
          --quick       small sizes for a smoke run (20,000 events, short append and mix runs)
          --rounds N    interleaved rounds (default 5): each round runs every workload on this project, then on each
                        peer; the tables show each figure's median round and each ratio's median with its lowest
                        and highest round, and the targets are judged on the medians
          --json FILE   also write every figure, the machine and the targets as JSON
          --only LIST   run only these workloads (`scan` is accepted for `replay`)
          --scale SIZES how the costs grow: import, open, scan, replay, verify, rebuild and file size
                        at each size, log and raw LMDB (default 1000000,10000000 events; a few minutes)
        """

    func only(_ workload: Workload) -> Bool { workloads.contains(workload) }

    var scale: Scale { Scale(quick: quick, records: records) }

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        var childWorkload: Workload?
        var childBackEnd: BackEnd?
        var childDirectory: String?
        var childResult: String?
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("peer-compare: \(message)\n\(Self.usage)\n".utf8))
            exit(64)
        }
        while let argument = iterator.next() {
            switch argument {
            case "--records":
                guard let value = iterator.next().flatMap(Int.init), value >= 10 else { fail("--records takes a number of at least 10") }
                records = value / 10 * 10
            case "--quick": quick = true
            case "--rounds":
                guard let value = iterator.next().flatMap(Int.init), (1...99).contains(value) else { fail("--rounds takes 1 to 99") }
                rounds = value
            case "--json": jsonPath = iterator.next()
            case "--only":
                let names = (iterator.next() ?? "").split(separator: ",").map { $0 == "scan" ? "replay" : String($0) }
                let chosen = names.compactMap(Workload.init(rawValue:)).filter(Workload.table.contains)
                guard !chosen.isEmpty, chosen.count == names.count else {
                    fail("--only takes a list of \(Workload.table.map(\.rawValue).joined(separator: ", "))")
                }
                workloads = Set(chosen)
            case "--scale":
                var sizes = [1_000_000, 10_000_000]
                if let next = iterator.next() {
                    guard !next.hasPrefix("-") else { fail("--scale goes alone, or with its sizes (1000000,10000000)") }
                    let parsed = next.split(separator: ",").compactMap { Int($0) }
                    guard !parsed.isEmpty, parsed.count == next.split(separator: ",").count, parsed.allSatisfy({ $0 >= 10_000 }) else {
                        fail("--scale takes sizes of at least 10000 events, separated by commas")
                    }
                    sizes = parsed.map { $0 / 10 * 10 }
                }
                scaleSizes = sizes
            case "--child": childWorkload = iterator.next().flatMap(Workload.init(rawValue:))
            case "--backend": childBackEnd = iterator.next().flatMap(BackEnd.init(rawValue:))
            case "--dir": childDirectory = iterator.next()
            case "--result": childResult = iterator.next()
            case "--help", "-h":
                print(Self.usage)
                exit(0)
            default: fail("unknown argument \(argument)")
            }
        }
        if let childWorkload, let childDirectory, let childResult {
            child = (childWorkload, childBackEnd, URL(fileURLWithPath: childDirectory), URL(fileURLWithPath: childResult))
        }
    }

    /// The arguments that give a child process the same sizes.
    var scaleArguments: [String] {
        (quick ? ["--quick"] : []) + (records.map { ["--records", String($0)] } ?? [])
    }
}

/// How much work each workload does.
struct Scale {
    /// Events in the data set (ten per account).
    let records: Int
    var accounts: Int { records / Dataset.eventsPerAccount }
    let singleRounds: Int
    let singleDurablePerRound: Int
    let singleRelaxedPerRound: Int
    let groupWriters: [(writers: Int, perWriter: Int)]
    let pointReads: Int
    let mixAccounts: Int
    let mixPerWriter: Int

    init(quick: Bool, records: Int?) {
        self.records = records ?? (quick ? 20_000 : 1_000_000)
        singleRounds = quick ? 2 : 10
        singleDurablePerRound = quick ? 25 : 200
        singleRelaxedPerRound = quick ? 250 : 2_000
        groupWriters = quick ? [(1, 50), (8, 10), (64, 2)] : [(1, 2_000), (8, 500), (64, 100)]
        pointReads = min(quick ? 5_000 : 100_000, self.records * 10)
        mixAccounts = quick ? 1_000 : 10_000
        mixPerWriter = quick ? 50 : 2_000
    }
}
