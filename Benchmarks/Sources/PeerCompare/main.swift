//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// peer-compare: the same workloads on this project's event log and store, on a raw LMDB loop and
// on SQLite (through GRDB), in one run, printed as tables of throughputs, ratios, latency
// percentiles and peak memory. Each workload runs on each back end in a child process of its own
// (the single-writer rounds run all three in one), so that its peak memory is its own.
//
//   swift run -c release peer-compare [--records N] [--quick] [--json FILE] [--only single,group,bulk,replay,rebuild,point,mix]
//   swift run -c release peer-compare --scale [1000000,10000000]

import Foundation

let options = Options(CommandLine.arguments)
if let child = options.child {
    try await runAsChild(child, scale: options.scale)
    exit(0)
}

let scale = options.scale
let loadAtStart = loadAverage()
let machine = machineDescription()
print("peer-compare on \(machine)")
print("load average at start: \(loadAtStart)")

let root = try temporaryDirectory("run")
defer { try? FileManager.default.removeItem(at: root) }

/// Runs `workload` in a child process and returns its figures with the child's peak RSS.
func inChild(_ workload: Options.Workload, _ backEnd: BackEnd?, _ directory: URL, records: Int? = nil) throws -> [Figure] {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let result = root.appendingPathComponent("result-\(UUID().uuidString).json")
    let label = "\(workload.rawValue) on \(backEnd?.title ?? "all back ends")"
    FileHandle.standardError.write(Data("… \(label)\n".utf8))
    let arguments =
        ["--child", workload.rawValue] + (backEnd.map { ["--backend", $0.rawValue] } ?? [])
        + ["--dir", directory.path, "--result", result.path] + (records.map { ["--records", String($0)] } ?? options.scaleArguments)
    let (status, maxRSS) = try runChild(arguments)
    guard status == 0 else { throw ChildError(reason: "the child for \(label) exited with status \(status)") }
    var figures = try JSONDecoder().decode([Figure].self, from: Data(contentsOf: result))
    for index in figures.indices { figures[index].maxRSSMiB = maxRSS }
    return figures
}

if let sizes = options.scaleSizes {
    print("data set: \(sizes.map { count($0) }.joined(separator: " and ")) events, ten per account, relaxed sync; fixed seeds\n")
    var bySize: [(size: Int, figures: [Figure])] = []
    for size in sizes {
        var figures: [Figure] = []
        for backEnd in [BackEnd.log, .raw] {
            let directory = root.appendingPathComponent("scale-\(size)-\(backEnd.rawValue)")
            figures += try inChild(.scale, backEnd, directory, records: size)
            try? FileManager.default.removeItem(at: directory)
        }
        bySize.append((size, figures))
    }
    print(scaleTable(bySize))
    print("\ntargets (issues 18 and 43):")
    print(targetLines(scaleTargets(bySize)))
    print("\nload average at end: \(loadAverage())")
    exit(0)
}

let meanPayload = Dataset.meanPayloadBytes(accounts: scale.accounts)
print(
    "data set: \(grouped(Double(scale.records))) events, \(grouped(Double(scale.accounts))) accounts, mean payload \(String(format: "%.0f", meanPayload)) bytes; fixed seeds"
)
print("durable = fsync per commit (SQLite: WAL, synchronous=FULL; relaxed: synchronous=OFF)\n")

/// One round: every asked-for workload, this project's back end first, then each peer's.
func runRound(_ round: Int) throws -> [Figure] {
    var figures: [Figure] = []
    if options.only(.single) {
        figures += try inChild(.single, nil, root.appendingPathComponent("single-\(round)"))
    }
    if options.only(.group) {
        for backEnd in BackEnd.embedded { figures += try inChild(.group, backEnd, root.appendingPathComponent("group-\(backEnd.rawValue)-\(round)")) }
    }
    // The data set is written (bulk) before it is replayed, folded (rebuild) and read (point), even
    // when only a later step is asked for; only the asked-for steps are reported.
    if [.bulk, .replay, .rebuild, .point].contains(where: options.only) {
        for backEnd in BackEnd.embedded {
            let directory = root.appendingPathComponent("data-\(backEnd.rawValue)-\(round)")
            let written = try inChild(.bulk, backEnd, directory)
            if options.only(.bulk) { figures += written }
            if options.only(.replay) { figures += try inChild(.replay, backEnd, directory) }
            if options.only(.rebuild) || options.only(.point) {
                let rebuilt = try inChild(.rebuild, backEnd, directory)
                if options.only(.rebuild) { figures += rebuilt }
            }
            if options.only(.point) { figures += try inChild(.point, backEnd, directory) }
            try? FileManager.default.removeItem(at: directory)
        }
    }
    if options.only(.mix) {
        for backEnd in BackEnd.embedded { figures += try inChild(.mix, backEnd, root.appendingPathComponent("mix-\(backEnd.rawValue)-\(round)")) }
    }
    if options.only(.postgres) {
        figures += try inChild(.postgres, nil, root.appendingPathComponent("postgres-\(round)"))
    }
    // The round's folders go with it, so that five rounds take no more disk than one.
    for name in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] where name.hasSuffix("-\(round)") {
        try? FileManager.default.removeItem(at: root.appendingPathComponent(name))
    }
    return figures
}

var rounds: [[Figure]] = []
for round in 1...options.rounds {
    if options.rounds > 1 { FileHandle.standardError.write(Data("round \(round) of \(options.rounds)\n".utf8)) }
    rounds.append(try runRound(round))
}
let figures = medianFigures(rounds)
let ratios = ratioSummaries(rounds)
if options.rounds > 1 {
    print("\(options.rounds) interleaved rounds: figures are each one's median round; ratios the median of the rounds' ratios (lowest–highest)\n")
}

let loadAtEnd = loadAverage()
let memoryMethod =
    "max RSS: ru_maxrss of the workload's child process from wait4 (includes memory-mapped file pages); "
    + "anonymous: the child's RssAnon from /proc/self/status sampled every 10 ms (heap and stacks only); "
    + "* = the three back ends ran in one child"
print(throughputTable(figures, ratios: ratios))
print("")
if figures.contains(where: { $0.latency != nil }) {
    print(latencyTable(figures))
    print("")
}
if figures.contains(where: { [.postgres, .rawPostgres].contains($0.backEnd) }) {
    print(postgresTable(figures))
    print("")
}
print(memoryTable(figures))
print("(\(memoryMethod))\n")
for figure in figures where !figure.notes.isEmpty {
    let notes = figure.notes.sorted { $0.key < $1.key }.map { "\($0.key) = \(String(format: "%.3f", $0.value))" }.joined(separator: ", ")
    print("note: \(figure.workload) on \(figure.backEnd.title): \(notes)")
}
let checked = targets(figures, records: scale.records, ratios: ratios) + postgresTargets(figures)
print("\ntargets (issues 7, 14, 15, 43 and 62):")
print(targetLines(checked))
print("\nload average at end: \(loadAtEnd)")

if let jsonPath = options.jsonPath {
    let report = Report(
        command: CommandLine.arguments.joined(separator: " "), machine: machine, loadAverageAtStart: loadAtStart,
        loadAverageAtEnd: loadAtEnd, records: scale.records, accounts: scale.accounts, meanPayloadBytes: meanPayload,
        memoryMethod: memoryMethod, rounds: options.rounds, figures: figures, ratios: ratios, targets: checked)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
    print("wrote \(jsonPath)")
}
