//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// What one wrk run measured.
struct LoadResult {
    let requestsPerSecond: Double
    let p50Micros: Double
    let p99Micros: Double
    let requests: Int
    /// Answers outside 2xx, and connect, read, write and timeout errors.
    let errors: Int
    let acknowledgedPatches: Int
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
    let text = try spawnAndWait(
        ["/usr/bin/env", "wrk", "-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--timeout", "10s", "-s", script.path, base + path])
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") }) else {
        throw NSError(domain: "server-load", code: 1, userInfo: [NSLocalizedDescriptionKey: "wrk printed no result:\n\(text)"])
    }
    let fields = line.split(separator: " ").dropFirst().map(String.init)
    let requests = Int(fields[0]) ?? 0
    let duration = Double(fields[5]) ?? 1
    return LoadResult(
        requestsPerSecond: Double(requests) / duration, p50Micros: Double(fields[3]) ?? 0, p99Micros: Double(fields[4]) ?? 0,
        requests: requests, errors: Int(fields[1]) ?? 0, acknowledgedPatches: Int(fields[2]) ?? 0)
}

/// Runs `arguments` (the program's path first) with its standard output in a file and returns
/// that output once the program has exited. `posix_spawn` and `waitpid`, not Foundation's
/// `Process`, whose `waitUntilExit` once never returned after wrk had exited, midway through a
/// five-round run.
func spawnAndWait(_ arguments: [String]) throws -> String {
    let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("server-load-\(UUID().uuidString).out")
    defer { try? FileManager.default.removeItem(at: outputFile) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, outputFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = arguments.map { strdup($0) } + [nil]
    let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for argument in argv { free(argument) }
        for variable in environment { free(variable) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, environment)
    guard spawned == 0 else {
        throw NSError(domain: "server-load", code: Int(spawned), userInfo: [NSLocalizedDescriptionKey: "cannot start \(arguments[0])"])
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw NSError(domain: "server-load", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "waitpid failed"]) }
    }
    return (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
}
