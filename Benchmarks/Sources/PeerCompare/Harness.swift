//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The three back ends every workload runs on.
enum BackEnd: String, Codable, CaseIterable {
    /// This project's event log (and, where the workload has one, its details cache).
    case log
    /// LMDB through its C API only.
    case raw
    /// SQLite through GRDB.
    case sqlite
    /// This project's log in PostgreSQL (`PostgresEventLog`).
    case postgres
    /// Plain INSERTs into one PostgreSQL table with a bigserial position, through postgres-nio.
    case rawPostgres

    /// The embedded back ends: the columns of the main tables.
    static let embedded: [BackEnd] = [.log, .raw, .sqlite]

    var title: String {
        switch self {
        case .log: "EventLog"
        case .raw: "raw LMDB"
        case .sqlite: "SQLite"
        case .postgres: "PostgresEventLog"
        case .rawPostgres: "raw PostgreSQL"
        }
    }
}

/// Monotonic nanoseconds.
@inline(__always)
func nowNanos() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// Adds up the time spent inside `time { … }` only (set-up between the calls is not counted).
struct Stopwatch {
    private(set) var nanos: UInt64 = 0
    var seconds: Double { Double(nanos) / 1e9 }

    @inline(__always)
    mutating func time<T>(_ body: () throws -> T) rethrows -> T {
        let start = nowNanos()
        defer { nanos &+= nowNanos() &- start }
        return try body()
    }

    @inline(__always)
    mutating func timeAsync<T>(_ body: () async throws -> T) async rethrows -> T {
        let start = nowNanos()
        defer { nanos &+= nowNanos() &- start }
        return try await body()
    }
}

/// Latency percentiles, in microseconds.
struct Percentiles: Codable {
    let count: Int
    let p50: Double
    let p95: Double
    let p99: Double
    let p999: Double
    let max: Double

    init(nanos samples: [UInt64]) {
        let sorted = samples.sorted()
        func at(_ quantile: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let index = Swift.min(sorted.count - 1, Int((Double(sorted.count) * quantile).rounded(.up)) - 1)
            return Double(sorted[Swift.max(0, index)]) / 1_000
        }
        count = sorted.count
        p50 = at(0.50)
        p95 = at(0.95)
        p99 = at(0.99)
        p999 = at(0.999)
        max = Double(sorted.last ?? 0) / 1_000
    }
}

/// One back end's figures for one workload (one row of one table).
struct Figure: Codable {
    /// The workload's key (`--only` name) and its row title.
    var workload: String
    var title: String
    var backEnd: BackEnd
    let operations: Int
    let seconds: Double
    let perSecond: Double
    var latency: Percentiles?
    var lag: Percentiles?
    /// Extra figures (e.g. the initial build's seconds next to the rebuild's).
    var notes: [String: Double] = [:]
    /// The measuring child process's peak resident set (getrusage via wait4; includes mapped file pages).
    var maxRSSMiB: Double?
    /// The child's peak anonymous resident memory (heap and stacks, not mapped files), sampled.
    var peakAnonMiB: Double?
    /// True when several back ends ran in the same child (the memory figures are then shared).
    var sharedProcess = false
    /// With several rounds: this figure is the median round's; each round's throughput, in round order.
    var roundsPerSecond: [Double]?
    /// With several rounds: the median round's throughput (equal to `perSecond`).
    var medianPerSecond: Double?

    init(_ workload: String, _ title: String, _ backEnd: BackEnd, operations: Int, seconds: Double) {
        self.workload = workload
        self.title = title
        self.backEnd = backEnd
        self.operations = operations
        self.seconds = seconds
        perSecond = seconds > 0 ? Double(operations) / seconds : 0
    }
}

/// A fresh temporary directory.
func temporaryDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("peer-compare-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The first line of a `/proc` or `/sys` file, trimmed.
func procLine(_ path: String) -> String? {
    (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) }
}

/// What the machine is, from `/proc`: CPU model and cores, memory, kernel, and the file system and
/// device that hold the temporary directory the workloads write to.
func machineDescription() -> String {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let memory = Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30)
    var model = "unknown CPU"
    if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
        let name = line.split(separator: ":").last
    {
        model = name.trimmingCharacters(in: .whitespaces)
    }
    let kernel = procLine("/proc/sys/kernel/osrelease") ?? "unknown kernel"
    return "\(model), \(cores) cores, \(String(format: "%.0f", memory)) GiB, Linux \(kernel); \(diskDescription())"
}

/// The mount that holds the temporary directory: device, file system, size, and whether the
/// kernel calls the disk rotational.
func diskDescription() -> String {
    let target = FileManager.default.temporaryDirectory.resolvingSymlinksInPath().path
    guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return "disk unknown" }
    var best: (device: String, point: String, type: String)?
    for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ").map(String.init)
        guard fields.count >= 3, target == fields[1] || target.hasPrefix(fields[1] == "/" ? "/" : fields[1] + "/") else { continue }
        if best == nil || fields[1].count > best!.point.count { best = (fields[0], fields[1], fields[2]) }
    }
    guard let best else { return "disk unknown" }
    let name = URL(fileURLWithPath: best.device).lastPathComponent
    var parts = ["\(best.type) on \(best.device) (mounted at \(best.point))"]
    if let sectors = procPartitionBlocks(name) { parts.append(String(format: "%.0f GiB", Double(sectors) / Double(1 << 20))) }
    if let rotational = procLine("/sys/block/\(name)/queue/rotational") { parts.append(rotational == "0" ? "non-rotational" : "rotational") }
    return "temp dir " + parts.joined(separator: ", ")
}

/// The size in KiB blocks that `/proc/partitions` gives for a device.
private func procPartitionBlocks(_ name: String) -> Int? {
    guard let table = try? String(contentsOfFile: "/proc/partitions", encoding: .utf8) else { return nil }
    for line in table.split(separator: "\n") {
        let fields = line.split(separator: " ")
        if fields.count == 4, fields[3] == name { return Int(fields[2]) }
    }
    return nil
}

/// The 1-, 5- and 15-minute load averages.
func loadAverage() -> String {
    procLine("/proc/loadavg").map { $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "unknown"
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

/// Draws indexes 0..<count with probability proportional to 1 / (rank + 1)^exponent: a few hot
/// items and a long tail.
struct Zipf: Sendable {
    private let cumulative: [Double]

    init(count: Int, exponent: Double) {
        var total = 0.0
        var cumulative: [Double] = []
        cumulative.reserveCapacity(count)
        for rank in 1...max(count, 1) {
            total += 1 / pow(Double(rank), exponent)
            cumulative.append(total)
        }
        self.cumulative = cumulative.map { $0 / total }
    }

    func next(_ generator: inout SplitMix64) -> Int {
        let draw = Double(generator.next() >> 11) / Double(1 << 53)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < draw { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The share of draws that land on the `top` hottest items.
    func share(ofTop top: Int) -> Double { cumulative[min(top, cumulative.count) - 1] }
}

/// Samples this process's anonymous resident memory (`RssAnon` in /proc/self/status) every 10 ms
/// on a thread of its own and keeps the highest value.
final class AnonymousMemorySampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peakKiB = 0
    private var running = true

    init() {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let current = Self.anonymousKiB()
                lock.withLock { peakKiB = max(peakKiB, current) }
                usleep(10_000)
            }
        }
    }

    /// Stops sampling and returns the peak in MiB.
    func stop() -> Double {
        let current = Self.anonymousKiB()
        return lock.withLock {
            running = false
            peakKiB = max(peakKiB, current)
            return Double(peakKiB) / 1024
        }
    }

    static func anonymousKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") })
        else { return 0 }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    }
}
