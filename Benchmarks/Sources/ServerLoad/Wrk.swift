//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccountTesting

/// What one wrk run measured.
struct LoadResult {
    let requestsPerSecond: Double
    let p50Micros: Double
    let p99Micros: Double
    let requests: Int
    /// Answers outside 2xx, and connect, read, write and timeout errors.
    let errors: Int
    let acknowledgedPatches: Int
    /// The machine's busy CPU time (every process: the servers, PostgreSQL, wrk) per request, in
    /// microseconds, from `/proc/stat`; 0 where it cannot be read.
    let machineCPUMicrosPerRequest: Double
    /// This process's CPU time (user and system) per request, in microseconds: the account server
    /// and the SQLite peer run here, the PostgreSQL peer's statements in PostgreSQL's processes.
    let processCPUMicrosPerRequest: Double
    /// The share of the machine's cores that were busy during the run (0–1): near 1, the row was
    /// bound by the cores; well below, by waits.
    let machineBusy: Double
    /// How long the run waited for a quiet machine before it started (``waitForQuietMachine()``),
    /// in seconds, and whether it got one.
    let settleSeconds: Double
    let settled: Bool
}

/// Waits until the machine's cores are at most 10 % busy over a quarter of a second, for at most
/// 15 s: what the row before left running (a flush, a checkpoint, PostgreSQL's background
/// writers, a projection catching up) then runs before this row's clock starts, not in it, so it
/// is charged to no side. Returns the time waited and whether the machine got quiet.
func waitForQuietMachine() -> (seconds: Double, settled: Bool) {
    let started = ContinuousClock.now
    while ContinuousClock.now - started < .seconds(15) {
        let before = CPUSample.now()
        Thread.sleep(forTimeInterval: 0.25)
        if CPUSample.now().busyShare(since: before) <= 0.10 { return (microseconds(ContinuousClock.now - started) / 1e6, true) }
    }
    return (microseconds(ContinuousClock.now - started) / 1e6, false)
}

/// CPU time spent so far, in microseconds: the machine's busy time over all cores and this
/// process's own.
struct CPUSample {
    let machine: Double
    let process: Double
    let wall: ContinuousClock.Instant

    static func now() -> CPUSample {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let process =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        return CPUSample(machine: machineBusyMicros(), process: process, wall: .now)
    }

    /// The share of the machine's cores (0–1) that were busy from `earlier` to this sample.
    func busyShare(since earlier: CPUSample) -> Double {
        (machine - earlier.machine) / (microseconds(wall - earlier.wall) * Double(ProcessInfo.processInfo.activeProcessorCount))
    }

    /// The first line of `/proc/stat` (`cpu user nice system idle iowait irq softirq steal ...`, in
    /// clock ticks): everything but idle and iowait.
    private static func machineBusyMicros() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8), let line = text.split(separator: "\n").first else { return 0 }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 8 else { return 0 }
        let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
        return busy * 1e6 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// Runs wrk with a Lua script that spreads requests over the accounts' tokens and counts what it got.
func runWrk(base: String, path: String, mode: String, tokens: [String], seconds: Int, connections: Int, threads: Int = 2) throws -> LoadResult {
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("server-load-\(UUID().uuidString).lua")
    defer { try? FileManager.default.removeItem(at: script) }
    let tokenList = tokens.map { "\"\($0)\"" }.joined(separator: ",")
    let lua = """
        local tokens = { \(tokenList) }
        local mode = "\(mode)"
        local threads = {}
        setup = function(thread) table.insert(threads, thread) end
        init = function(args) sent = 0; acked = 0; failed = 0 end
        request = function()
          sent = sent + 1
          local token = tokens[(sent % #tokens) + 1]
          if mode == "login" then
            return wrk.format("POST", "\(path)", {["Content-Type"] = "application/json"},
              '{"userId":"load' .. (sent % #tokens) .. '@example.org","password":"correct horse battery"}')
          end
          local headers = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}
          if mode == "mixed" and sent % 5 == 0 then
            local value = (sent % 2 == 0) and "female" or "male"
            return wrk.format("PATCH", "\(path)", headers, '{"set":{"genderIdentity":"' .. value .. '"}}')
          end
          return wrk.format("GET", "\(path)", headers)
        end
        response = function(status, headers, body)
          if status < 200 or status >= 300 then failed = failed + 1 end
          if status == 200 and string.sub(body, 1, 11) == '{"account":' then acked = acked + 1 end
        end
        done = function(summary, latency, requests)
          local a, f = 0, 0
          for _, t in ipairs(threads) do a = a + t:get("acked"); f = f + t:get("failed") end
          io.write(string.format("RESULT %d %d %d %.1f %.1f %.3f\\n", summary.requests, f + summary.errors.timeout + summary.errors.connect + summary.errors.read + summary.errors.write, a,
            latency:percentile(50), latency:percentile(99), summary.duration / 1e6))
        end
        """
    try lua.write(to: script, atomically: true, encoding: .utf8)
    // The project's `ChildProcess`, not Foundation's `Process`: wrk gets none of the server's
    // descriptors (sockets, files), and `Process.run` crashes with many of them open.
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["wrk", "-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--timeout", "10s", "-s", script.path, base + path]
    let output = Pipe()
    process.standardOutput = output
    let settle = waitForQuietMachine()
    let before = CPUSample.now()
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let after = CPUSample.now()
    let text = String(decoding: data, as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") }) else {
        throw NSError(domain: "server-load", code: 1, userInfo: [NSLocalizedDescriptionKey: "wrk printed no result:\n\(text)"])
    }
    let fields = line.split(separator: " ").dropFirst().map(String.init)
    let requests = Int(fields[0]) ?? 0
    let duration = Double(fields[5]) ?? 1
    return LoadResult(
        requestsPerSecond: Double(requests) / duration, p50Micros: Double(fields[3]) ?? 0, p99Micros: Double(fields[4]) ?? 0,
        requests: requests, errors: Int(fields[1]) ?? 0, acknowledgedPatches: Int(fields[2]) ?? 0,
        machineCPUMicrosPerRequest: (after.machine - before.machine) / Double(max(requests, 1)),
        processCPUMicrosPerRequest: (after.process - before.process) / Double(max(requests, 1)),
        machineBusy: after.busyShare(since: before),
        settleSeconds: settle.seconds, settled: settle.settled)
}

func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}
