//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// The rows of the `--scale` table: a figure's key, its title, and whether it is a time (lower is
/// better, printed in ms) rather than a rate.
private let scaleRows: [(key: String, title: String, isTime: Bool)] = [
    ("import", "import, 2,000 events per commit (events/s)", false),
    ("import-workequal", "import against the raw loop doing the log's work (events/s)", false),
    ("open", "open the existing log, read its last position (ms)", true),
    ("scan", "full scan, payloads not decoded (events/s)", false),
    ("replay", "full replay, read in place through views (events/s)", false),
    ("replay-decoded", "full replay, every value decoded in place (events/s)", false),
    ("replay-copied", "full replay, copied, then decoded (events/s)", false),
    ("verify", "verify every record and the chain (records/s)", false),
    ("rebuild", "rebuild of the details table (events/s)", false),
    ("open-store", "open the log and its built details table (ms)", true)
]

private func find(_ figures: [Figure], _ key: String, _ backEnd: BackEnd) -> Figure? {
    figures.first { $0.workload == key && $0.backEnd == backEnd }
}

private func show(_ figure: Figure?, isTime: Bool) -> String {
    guard let figure else { return "—" }
    return isTime ? String(format: "%.2f", figure.seconds * 1_000) : grouped(figure.perSecond)
}

/// Larger is better for both kinds: a rate's ratio, or the inverse ratio of two times.
private func ratio(_ ours: Figure?, _ theirs: Figure?, isTime: Bool) -> Double? {
    guard let ours, let theirs, ours.seconds > 0, theirs.seconds > 0 else { return nil }
    return isTime ? theirs.seconds / ours.seconds : ours.perSecond / theirs.perSecond
}

private func showRatio(_ value: Double?) -> String {
    value.map { String(format: "%.2f×", $0) } ?? "—"
}

/// One column group per size (the log, raw LMDB, their ratio), then the log's largest size
/// against its smallest (for a time: the smallest's time over the largest's).
func scaleTable(_ bySize: [(size: Int, figures: [Figure])]) -> String {
    guard let first = bySize.first, let last = bySize.last else { return "" }
    var header = "| at each size |"
    var rule = "|---|"
    for (size, _) in bySize {
        header += " \(count(size)): EventLog | raw LMDB | ratio |"
        rule += "---:|---:|---:|"
    }
    header += " EventLog \(count(last.size)) / \(count(first.size)) |"
    rule += "---:|"
    var lines = [header, rule]
    for row in scaleRows {
        var line = "| \(row.title) |"
        for (_, figures) in bySize {
            let ours = find(figures, peerRows[row.key] ?? row.key, .log)
            let raw = find(figures, row.key, .raw)
            line += " \(show(ours, isTime: row.isTime)) | \(show(raw, isTime: row.isTime)) | \(showRatio(ratio(ours, raw, isTime: row.isTime))) |"
        }
        let logRow = peerRows[row.key] ?? row.key
        let growth = ratio(find(last.figures, logRow, .log), find(first.figures, logRow, .log), isTime: row.isTime)
        lines.append(line + " \(showRatio(growth)) |")
    }
    var sizeLine = "| file size per event (bytes) |"
    for (_, figures) in bySize {
        let ours = find(figures, "import", .log)?.notes["bytesPerEvent"]
        let raw = find(figures, "import", .raw)?.notes["bytesPerEvent"]
        let shown = [ours, raw].map { $0.map { String(format: "%.0f", $0) } ?? "—" }
        let share = ours.flatMap { ours in raw.map { String(format: "%.2f×", ours / $0) } } ?? "—"
        sizeLine += " \(shown[0]) | \(shown[1]) | \(share) |"
    }
    lines.append(sizeLine + " |")
    let notes = bySize.compactMap { size, figures in
        find(figures, "rebuild", .log)?.notes["initialBuildSeconds"].map { "first build at \(count(size)): \(String(format: "%.2f", $0)) s" }
    }
    return lines.joined(separator: "\n")
        + "\n\n(ratio: EventLog against raw LMDB, above 1× when the log is faster; for times, raw's time over the log's. "
        + "The rebuild row is the blue/green rebuild of an existing table; \(notes.joined(separator: ", ")).)"
}

/// Issue 18's scale targets, between the smallest and the largest size, and issue 43's import ratio at each size.
func scaleTargets(_ bySize: [(size: Int, figures: [Figure])]) -> [Target] {
    guard let first = bySize.first, let last = bySize.last, bySize.count > 1 else { return [] }
    var targets: [Target] = []
    for key in ["import", "scan", "replay", "verify", "rebuild"] {
        let growth = ratio(find(last.figures, key, .log), find(first.figures, key, .log), isTime: false)
        targets.append(
            Target(
                name: "\(key) rate at \(count(last.size)) within 25% of \(count(first.size))", met: growth.map { $0 >= 0.75 },
                detail: showRatio(growth)))
    }
    for key in ["open", "open-store"] {
        let small = find(first.figures, key, .log)?.seconds
        let large = find(last.figures, key, .log)?.seconds
        // Independent of size: at most 1.5 times as long, or within a millisecond.
        let met = small.flatMap { small in large.map { $0 <= max(small * 1.5, small + 0.001) } }
        let detail = [small, large].map { $0.map { String(format: "%.2f ms", $0 * 1_000) } ?? "—" }.joined(separator: " → ")
        targets.append(Target(name: "\(key) time independent of size (≤ 1.5× or + 1 ms)", met: met, detail: detail))
    }
    for (size, figures) in bySize {
        let workEqual = ratio(find(figures, "import", .log), find(figures, "import-workequal", .raw), isTime: false)
        targets.append(
            Target(
                name: "import at \(count(size)) ≥ 0.5× the work-equal loop (issue 43)", met: workEqual.map { $0 >= 0.5 },
                detail: showRatio(workEqual)))
        let verify = find(figures, "verify", .log)?.perSecond
        targets.append(
            Target(
                name: "verify at \(count(size)) ≥ 1,000,000 records/s", met: verify.map { $0 >= 1_000_000 },
                detail: verify.map { "\(grouped($0)) records/s" } ?? "not run"))
    }
    return targets
}
