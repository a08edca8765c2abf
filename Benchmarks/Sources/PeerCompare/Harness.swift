//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// One measured run of a workload on one back end.
struct Measurement: Codable {
    let workload: String
    let backEnd: String
    let operations: Int
    let seconds: Double
    var perSecond: Double { Double(operations) / seconds }

    /// Two measurements of the same workload taken in turns, added up.
    static func + (lhs: Measurement, rhs: Measurement) -> Measurement {
        Measurement(workload: lhs.workload, backEnd: lhs.backEnd, operations: lhs.operations + rhs.operations, seconds: lhs.seconds + rhs.seconds)
    }
}

/// Times `body`, which performs `operations` operations, and returns the measurement.
func measure(_ workload: String, _ backEnd: String, operations: Int, _ body: () async throws -> Void) async throws -> Measurement {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Measurement(workload: workload, backEnd: backEnd, operations: operations, seconds: seconds)
}

/// A fresh temporary directory that is removed when the run ends.
func temporaryDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("peer-compare-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// What the machine is, for the report.
func machineDescription() -> String {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let memory = Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30)
    var model = "unknown CPU"
    if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
       let name = line.split(separator: ":").last {
        model = name.trimmingCharacters(in: .whitespaces)
    }
    return "\(model), \(cores) cores, \(String(format: "%.0f", memory)) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
}

/// Prints a table: one row per workload, the throughput of each back end, and the ratios
/// of this project's figure to each peer's.
func printTable(_ rows: [ComparisonRow], unit: String = "ops/s") {
    let header = ["workload", "EventLog \(unit)", "raw LMDB \(unit)", "SQLite \(unit)", "EventLog / raw", "EventLog / SQLite"]
    var lines = [header]
    for row in rows {
        lines.append([
            row.workload,
            String(format: "%.0f", row.ours.perSecond),
            String(format: "%.0f", row.peer.perSecond),
            String(format: "%.0f", row.sqlite.perSecond),
            String(format: "%.2f×", row.ours.perSecond / row.peer.perSecond),
            String(format: "%.2f×", row.ours.perSecond / row.sqlite.perSecond)
        ])
    }
    let widths = (0..<header.count).map { column in lines.map { $0[column].count }.max() ?? 0 }
    for (index, line) in lines.enumerated() {
        let cells = line.enumerated().map { column, cell in
            column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[column] - cell.count) + cell
        }
        print("| " + cells.joined(separator: " | ") + " |")
        if index == 0 {
            print("|" + widths.enumerated().map { column, width in String(repeating: "-", count: width + 1) + (column == 0 ? "-" : ":") }.joined(separator: "|") + "|")
        }
    }
}

/// A payload of a realistic account event size (deterministic bytes).
func samplePayload(size: Int = 300) -> [UInt8] {
    var generator = SplitMix64(seed: 42)
    return (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
}

/// A small, fixed-seed random generator so every run does the same work.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
