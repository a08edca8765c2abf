//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// The order of the rows.
let workloadOrder = [
    "single-durable", "single-durable-handoff", "single-durable-layout", "single-relaxed", "single-relaxed-handoff", "group-1", "group-8",
    "group-8-batched",
    "group-8-handoff", "group-8-handoff-layout", "group-64",
    "group-64-batched",
    "group-64-handoff", "group-64-handoff-layout", "bulk", "import", "import-workequal", "scan", "scan-checked", "scan-checked-workequal", "replay",
    "replay-decoded", "replay-copied",
    "rebuild", "point", "point-details", "mix"
]

/// 1234567.8 → "1,234,568".
func grouped(_ value: Double) -> String {
    let digits = String(Int(value.rounded()))
    var result = ""
    for (index, character) in digits.reversed().enumerated() {
        if index > 0, index % 3 == 0, character != "-" { result.append(",") }
        result.append(character)
    }
    return String(result.reversed())
}

func micros(_ value: Double) -> String {
    value < 100 ? String(format: "%.1f", value) : grouped(value)
}

/// A Markdown table with right-aligned figures.
func markdownTable(_ header: [String], _ rows: [[String]]) -> String {
    var lines = ["| " + header.joined(separator: " | ") + " |", "|" + header.indices.map { $0 == 0 ? "---" : "---:" }.joined(separator: "|") + "|"]
    lines += rows.map { "| " + $0.joined(separator: " | ") + " |" }
    return lines.joined(separator: "\n")
}

/// The figures grouped by workload, in table order.
func byWorkload(_ figures: [Figure]) -> [(key: String, title: String, figures: [BackEnd: Figure])] {
    let keys = workloadOrder.filter { key in figures.contains { $0.workload == key } }
    return keys.map { key in
        let matching = figures.filter { $0.workload == key }
        return (key, matching[0].title, Dictionary(matching.map { ($0.backEnd, $0) }, uniquingKeysWith: { first, _ in first }))
    }
}

/// Rows of a peer alone, and the log's row they are set against (shown in their EventLog column).
let peerRows = ["import-workequal": "import", "scan-checked-workequal": "scan-checked"]

/// A ratio of this project's figure to a peer's, over interleaved rounds: the median of the
/// rounds' ratios (each round's figures were measured minutes apart at most), and the lowest and
/// highest round.
struct RatioSummary: Codable {
    let workload: String
    let peer: BackEnd
    let median: Double
    let low: Double
    let high: Double
    let rounds: Int

    var text: String {
        rounds > 1 ? String(format: "%.2f× (%.2f–%.2f)", median, low, high) : String(format: "%.2f×", median)
    }
}

/// The median of `values` (the lower middle one for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[(sorted.count - 1) / 2]
}

/// Each figure of the median round (by throughput) of its workload and back end, with every
/// round's throughput beside it.
func medianFigures(_ rounds: [[Figure]]) -> [Figure] {
    guard let first = rounds.first else { return [] }
    guard rounds.count > 1 else { return first }
    return first.map { figure in
        let same = rounds.compactMap { round in round.first { $0.workload == figure.workload && $0.backEnd == figure.backEnd } }
        let middle = median(same.map(\.perSecond))
        var chosen = same.first { $0.perSecond == middle } ?? figure
        chosen.roundsPerSecond = same.map(\.perSecond)
        chosen.medianPerSecond = middle
        return chosen
    }
}

/// This project's figure over each peer's, per workload, as the median of the rounds' ratios.
func ratioSummaries(_ rounds: [[Figure]]) -> [RatioSummary] {
    guard let first = rounds.first else { return [] }
    var summaries: [RatioSummary] = []
    for figure in first where figure.backEnd == .log {
        let logKey = figure.workload
        for peer in [BackEnd.raw, .sqlite] {
            let ratios = rounds.compactMap { round -> Double? in
                let ours = round.first { $0.workload == logKey && $0.backEnd == .log }
                let theirs =
                    round.first { $0.workload == logKey && $0.backEnd == peer }
                    ?? peerRows.first { $0.value == logKey }.flatMap { key, _ in round.first { $0.workload == key && $0.backEnd == peer } }
                guard let ours, let theirs, theirs.perSecond > 0 else { return nil }
                return ours.perSecond / theirs.perSecond
            }
            guard !ratios.isEmpty else { continue }
            summaries.append(
                RatioSummary(
                    workload: logKey, peer: peer, median: median(ratios), low: ratios.min() ?? 0, high: ratios.max() ?? 0, rounds: ratios.count))
        }
    }
    return summaries
}

func throughputTable(_ figures: [Figure], ratios: [RatioSummary] = []) -> String {
    let rows = byWorkload(figures).map { row -> [String] in
        var rowFigures = row.figures
        if let logRow = peerRows[row.key], rowFigures[.log] == nil {
            rowFigures[.log] = figures.first { $0.workload == logRow && $0.backEnd == .log }
        }
        let cells = BackEnd.embedded.map { rowFigures[$0].map { grouped($0.perSecond) } ?? "—" }
        let ratioCells = [BackEnd.raw, .sqlite].map { peer -> String in
            if let summary = ratios.first(where: { $0.workload == (peerRows[row.key] ?? row.key) && $0.peer == peer }), summary.rounds > 1 {
                return summary.text
            }
            guard let ours = rowFigures[.log], let theirs = rowFigures[peer], theirs.perSecond > 0 else { return "—" }
            return String(format: "%.2f×", ours.perSecond / theirs.perSecond)
        }
        return [row.title] + cells + ratioCells
    }
    return markdownTable(["workload (per second)", "EventLog", "raw LMDB", "SQLite", "EventLog / raw", "EventLog / SQLite"], rows)
}

func latencyTable(_ figures: [Figure]) -> String {
    var rows: [[String]] = []
    for row in byWorkload(figures) {
        for backEnd in BackEnd.allCases {
            guard let figure = row.figures[backEnd], let latency = figure.latency else { continue }
            let lag = figure.lag.map { [micros($0.p50), micros($0.p99)] } ?? ["", ""]
            rows.append(
                [
                    row.title, backEnd.title, micros(latency.p50), micros(latency.p95), micros(latency.p99), micros(latency.p999),
                    micros(latency.max)
                ] + lag)
        }
    }
    return markdownTable(["workload (µs)", "back end", "p50", "p95", "p99", "p99.9", "max", "subscriber lag p50", "lag p99"], rows)
}

func memoryTable(_ figures: [Figure]) -> String {
    let rows = byWorkload(figures).map { row -> [String] in
        let cells = BackEnd.embedded.map { backEnd -> String in
            guard let figure = row.figures[backEnd], let rss = figure.maxRSSMiB else { return "—" }
            return "\(grouped(rss)) / \(grouped(figure.peakAnonMiB ?? 0))" + (figure.sharedProcess ? "*" : "")
        }
        return [row.title] + cells
    }
    return markdownTable(["peak memory, MiB: max RSS / anonymous", "EventLog", "raw LMDB", "SQLite"], rows)
}

/// One of issue 7's targets, checked against this run.
struct Target: Codable {
    let name: String
    /// nil when the workload did not run.
    let met: Bool?
    let detail: String
}

func targets(_ figures: [Figure], records: Int, ratios: [RatioSummary] = []) -> [Target] {
    func find(_ workload: String, _ backEnd: BackEnd = .log) -> Figure? {
        figures.first { $0.workload == workload && $0.backEnd == backEnd }
    }
    /// Over several rounds, the median of the rounds' ratios; else the ratio of the figures.
    func ratio(_ workload: String, _ peer: BackEnd) -> Double? {
        if let summary = ratios.first(where: { $0.workload == workload && $0.peer == peer }) { return summary.median }
        guard let ours = find(workload), let theirs = find(workload, peer), theirs.perSecond > 0 else { return nil }
        return ours.perSecond / theirs.perSecond
    }
    /// Over several rounds, the median of the rounds' ratios (each round's two figures); else
    /// the ratio of the figures.
    func roundRatio(_ ours: Figure, _ theirs: Figure) -> Double? {
        guard theirs.perSecond > 0 else { return nil }
        if let mine = ours.roundsPerSecond, let their = theirs.roundsPerSecond, mine.count == their.count, mine.count > 1,
            their.allSatisfy({ $0 > 0 })
        {
            return median(zip(mine, their).map { $0 / $1 })
        }
        return ours.perSecond / theirs.perSecond
    }
    func handoffRatio(_ ours: String, _ peer: String) -> Double? {
        guard let ours = find(ours), let theirs = find(peer, .raw) else { return nil }
        return roundRatio(ours, theirs)
    }
    func batchedRatio(_ writers: Int) -> Double? {
        guard let ours = find("group-\(writers)"), let raw = find("group-\(writers)-batched", .raw) else { return nil }
        return roundRatio(ours, raw)
    }
    func target(_ name: String, _ value: Double?, _ passes: (Double) -> Bool, _ show: (Double) -> String) -> Target {
        guard let value else { return Target(name: name, met: nil, detail: "not run") }
        return Target(name: name, met: passes(value), detail: show(value))
    }
    let times = { (value: Double) in String(format: "%.2f×", value) }
    /// The ratio, and what the async hand-off alone reaches against the same raw loop.
    func batchedTimes(_ writers: Int) -> (Double) -> String {
        { value in
            guard let handoff = find("group-\(writers)-handoff", .raw), let raw = find("group-\(writers)-batched", .raw),
                let alone = roundRatio(handoff, raw)
            else {
                return times(value)
            }
            return times(value) + String(format: " (the hand-off alone, no log work: %.2f×)", alone)
        }
    }
    let rebuild = find("rebuild")
    var result = [
        target("single durable append ≥ 0.8× raw LMDB", ratio("single-durable", .raw), { $0 >= 0.8 }, times),
        target(
            "single durable append ≥ 0.9× raw LMDB (issue 62)", ratio("single-durable", .raw), { $0 >= 0.9 },
            { value in
                times(value) + " (against the raw loop behind the same async hand-off: "
                    + "\(handoffRatio("single-durable", "single-durable-handoff").map(times) ?? "—"); "
                    + "against the raw loop writing the log's record layout: "
                    + "\(handoffRatio("single-durable", "single-durable-layout").map(times) ?? "—"))"
            }),
        target("relaxed single append ≥ 1.0× SQLite (issue 62)", ratio("single-relaxed", .sqlite), { $0 >= 1 }, times),
        target("relaxed bulk append, 5 a commit, ≥ 1.0× SQLite (issue 62)", ratio("bulk", .sqlite), { $0 >= 1 }, times),
        target("64 writers ≥ 10× SQLite (issue 62)", ratio("group-64", .sqlite), { $0 >= 10 }, times),
        target("64 writers ≥ 100,000 events/s", find("group-64")?.perSecond, { $0 >= 100_000 }, { "\(grouped($0)) events/s" }),
        target("64 writers ≥ 3× SQLite", ratio("group-64", .sqlite), { $0 >= 3 }, times),
        target("64 writers ≥ 0.7× raw LMDB committing 64 events per flush", batchedRatio(64), { $0 >= 0.7 }, batchedTimes(64)),
        target("8 writers ≥ 0.7× raw LMDB committing 8 events per flush", batchedRatio(8), { $0 >= 0.7 }, batchedTimes(8)),
        target(
            "64 writers ≥ 0.9× raw LMDB behind the same async hand-off (issues 43, 62)", handoffRatio("group-64", "group-64-handoff"), { $0 >= 0.9 },
            { value in
                times(value) + " (against the same hand-off writing the log's record layout: "
                    + "\(handoffRatio("group-64", "group-64-handoff-layout").map(times) ?? "—"))"
            }),
        target("64 writers ≥ 0.8× raw LMDB committing 64 events per flush (issue 43)", batchedRatio(64), { $0 >= 0.8 }, times),
        target(
            "1 relaxed writer ≥ 0.8× raw LMDB behind the async hand-off (issue 43)", handoffRatio("single-relaxed", "single-relaxed-handoff"),
            { $0 >= 0.8 }, times),
        target(
            "replay ≥ 2,000,000 events/s (read in place through views)", find("replay")?.perSecond, { $0 >= 2_000_000 },
            { "\(grouped($0)) events/s (every value decoded: \(find("replay-decoded").map { grouped($0.perSecond) } ?? "—") events/s)" }),
        target("replay ≥ 5× SQLite", ratio("replay", .sqlite), { $0 >= 5 }, times),
        target("rebuild of \(count(records)) events < 10 s", rebuild?.seconds, { $0 < 10 }, { String(format: "%.2f s", $0) }),
        target(
            "rebuild peak memory < 200 MB (max RSS of the process)", rebuild?.maxRSSMiB.map { $0 * 1.048576 }, { $0 < 200 },
            {
                String(format: "%.0f MB max RSS (anonymous: %.0f MB)", $0, (rebuild?.peakAnonMiB ?? 0) * 1.048576)
            }),
        // The same peak without the pages of the memory-mapped files (the log and the cache),
        // which the kernel counts in RSS while they stay mapped but can drop at any time.
        target(
            "rebuild peak memory < 200 MB (anonymous RSS: heap and stacks)", rebuild?.peakAnonMiB.map { $0 * 1.048576 }, { $0 < 200 },
            {
                String(format: "%.0f MB", $0)
            }),
        target("point read p99 < 20 µs", find("point")?.latency?.p99, { $0 < 20 }, { String(format: "%.1f µs", $0) }),
        target(
            "import ≥ 0.5× the work-equal loop (issue 43)", handoffRatio("import", "import-workequal"), { $0 >= 0.5 },
            { value in
                times(value) + " (against the one-put raw loop: \(ratio("import", .raw).map(times) ?? "—"))"
            }),
        target("import ≥ 400,000 events/s (issue 43)", find("import")?.perSecond, { $0 >= 400_000 }, { "\(grouped($0)) events/s" }),
        target("import ≥ 1.0× the work-equal loop (issue 62)", handoffRatio("import", "import-workequal"), { $0 >= 1 }, times),
        target(
            "full scan, checked, ≥ 0.9× the same walk over the log's layout (issue 62)",
            handoffRatio("scan-checked", "scan-checked-workequal"), { $0 >= 0.9 }, times),
        target(
            "full scan, checked, ≥ 0.9× the raw checked walk (issue 43)", ratio("scan-checked", .raw), { $0 >= 0.9 },
            { value in
                times(value) + " (over the same bytes, records in the log's layout: "
                    + "\(handoffRatio("scan-checked", "scan-checked-workequal").map(times) ?? "—"))"
            })
    ]
    if records != 1_000_000 {
        result = result.map {
            $0.name.hasPrefix("rebuild of") ? Target(name: $0.name, met: $0.met, detail: $0.detail + " (the target is for 1 M)") : $0
        }
    }
    return result
}

func targetLines(_ targets: [Target]) -> String {
    targets.map { target in
        let verdict = target.met.map { $0 ? "met   " : "MISSED" } ?? "—     "
        return "\(verdict) \(target.name): \(target.detail)"
    }.joined(separator: "\n")
}

/// Everything a run produced, for `--json`.
struct Report: Codable {
    let command: String
    let machine: String
    let loadAverageAtStart: String
    let loadAverageAtEnd: String
    let records: Int
    let accounts: Int
    let meanPayloadBytes: Double
    let memoryMethod: String
    /// Interleaved rounds: each figure is its median round's, each ratio the median of the rounds'.
    let rounds: Int
    let figures: [Figure]
    let ratios: [RatioSummary]
    let targets: [Target]
}

/// The PostgreSQL rows: this project's `PostgresEventLog` against the raw INSERT baseline, and,
/// where the run has the same workload on LMDB, the embedded log beside them.
func postgresTable(_ figures: [Figure]) -> String {
    let keys = [
        "pg-single", "pg-single-workequal", "pg-group-8", "pg-group-64", "pg-bulk", "pg-bulk-workequal", "pg-replay", "pg-replay-subscribed",
        "pg-rebuild"
    ]
    let embedded = ["pg-single": "single-durable", "pg-group-8": "group-8", "pg-group-64": "group-64"]
    let rows = keys.compactMap { key -> [String]? in
        let matching = figures.filter { $0.workload == key }
        guard let first = matching.first else { return nil }
        let ours = matching.first { $0.backEnd == .postgres }
        let raw = matching.first { $0.backEnd == .rawPostgres }
        let lmdb = embedded[key].flatMap { name in figures.first { $0.workload == name && $0.backEnd == .log } }
        let ratio = ours.flatMap { ours in raw.map { String(format: "%.2f×", ours.perSecond / max($0.perSecond, 1e-9)) } } ?? "—"
        return [
            first.title, ours.map { grouped($0.perSecond) } ?? "—", raw.map { grouped($0.perSecond) } ?? "—", ratio,
            lmdb.map { grouped($0.perSecond) } ?? "—"
        ]
    }
    return markdownTable(
        ["PostgreSQL workload (per second)", "PostgresEventLog", "raw PostgreSQL", "PostgresEventLog / raw", "EventLog (LMDB), same run"], rows)
}

/// Issue 15's targets.
func postgresTargets(_ figures: [Figure]) -> [Target] {
    func rate(_ key: String, _ backEnd: BackEnd) -> Double? {
        figures.first { $0.workload == key && $0.backEnd == backEnd }?.perSecond
    }
    func ratio(_ key: String) -> Double? {
        guard let ours = rate(key, .postgres), let raw = rate(key, .rawPostgres), raw > 0 else { return nil }
        return ours / raw
    }
    func target(_ name: String, _ value: Double?, _ passes: (Double) -> Bool, _ show: (Double) -> String) -> Target {
        guard let value else { return Target(name: name, met: nil, detail: "not run") }
        return Target(name: name, met: passes(value), detail: show(value))
    }
    let times = { (value: Double) in String(format: "%.2f×", value) }
    return [
        target("PostgreSQL single durable append ≥ 0.7× raw PostgreSQL", ratio("pg-single"), { $0 >= 0.7 }, times),
        target("PostgreSQL 64 writers ≥ 3× raw PostgreSQL", ratio("pg-group-64"), { $0 >= 3 }, times),
        // Replay as a projection or `subscribe(after:)` does it: through a subscription, which reads
        // a batch ahead while it catches up. Paged `read(from:)` calls are shown beside it.
        target(
            "PostgreSQL replay (subscription) ≥ 200,000 events/s", rate("pg-replay-subscribed", .postgres), { $0 >= 200_000 },
            { value in
                "\(grouped(value)) events/s (paged reads of 1,000: \(rate("pg-replay", .postgres).map { grouped($0) } ?? "—") events/s)"
            })
    ]
}
