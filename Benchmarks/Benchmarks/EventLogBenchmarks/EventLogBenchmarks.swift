//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// ordo-one/benchmark suites for the event log: `swift package benchmark` from this folder.

import Benchmark
import EventLog
import EventLogProtocol
import Foundation

private func temporaryLog(durable: Bool) throws -> EventLog {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("eventlog-bench-\(UUID().uuidString)")
    var options = EventLogOptions()
    options.sync = durable ? .durable : .relaxed
    return try EventLog(path: directory.path, options: options)
}

private let payload = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) })

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        maxDuration: .seconds(5), maxIterations: 1_000)

    Benchmark("Durable append, one event per commit") { benchmark in
        let log = try temporaryLog(durable: true)
        defer {
            log.close()
            try? FileManager.default.removeItem(atPath: log.path)
        }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            _ = try await log.append(ProposedEvent(type: "bench", payload: payload), to: "stream")
        }
    }

    Benchmark("Relaxed append, batches of 1,000", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let log = try temporaryLog(durable: false)
        defer {
            log.close()
            try? FileManager.default.removeItem(atPath: log.path)
        }
        let batch = (0..<1_000).map { _ in ProposedEvent(type: "bench", payload: payload) }
        benchmark.startMeasurement()
        for _ in 0..<(benchmark.scaledIterations.count / 1_000) {
            _ = try await log.append(batch.map { ProposedEvent(type: $0.type, payload: $0.payload) }, to: "stream")
        }
    }

    Benchmark("Scan 100,000 records", configuration: .init(maxIterations: 20)) { benchmark in
        let log = try temporaryLog(durable: false)
        defer {
            log.close()
            try? FileManager.default.removeItem(atPath: log.path)
        }
        for _ in 0..<100 {
            _ = try await log.append((0..<1_000).map { _ in ProposedEvent(type: "bench", payload: payload) }, to: "stream")
        }
        benchmark.startMeasurement()
        var bytes = 0
        try log.replay { record in
            bytes &+= record.payload.count
            return true
        }
        blackHole(bytes)
    }
}
