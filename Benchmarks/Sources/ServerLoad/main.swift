//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// Load on the account server over loopback, with wrk (Debian's `wrk`) as the client:
//   swift run -c release server-load [--seconds 10] [--connections 64]
// Runs, on one durable store with 64 signed-in accounts:
//   1. GET /health            the framework's floor: Hummingbird answering a fixed JSON (the peer)
//   2. GET /v1/account        a signed-in details read (session check + details cache)
//   3. 80% reads, 20% PATCH   modifications appended durably; afterwards every acknowledged one
//                             must be in the log
//   4. POST /v1/sessions      logins with the store's default Argon2id (bounded by hashing)
// and each hash alone on one thread (Argon2id and scrypt at OWASP's parameters), for logins per
// second per core. Prints requests/s, p50 and
// p99, and each row's ratio to the floor measured in the same run.

import AccountServer
import Foundation
import SpeziAccount
import SpeziAccountStore

struct Options {
    var seconds = 10
    var connections = 64

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--seconds": seconds = iterator.next().flatMap(Int.init) ?? seconds
            case "--connections": connections = iterator.next().flatMap(Int.init) ?? connections
            default:
                FileHandle.standardError.write(Data("usage: server-load [--seconds N] [--connections N]\n".utf8))
                exit(2)
            }
        }
    }
}

/// What one wrk run measured.
struct LoadResult {
    let requestsPerSecond: Double
    let p50Micros: Double
    let p99Micros: Double
    let requests: Int
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
          if status >= 300 then failed = failed + 1 end
          if status == 200 and string.sub(body, 1, 11) == '{"account":' then acked = acked + 1 end
        end
        done = function(summary, latency, requests)
          local a, f = 0, 0
          for _, t in ipairs(threads) do a = a + t:get("acked"); f = f + t:get("failed") end
          io.write(string.format("RESULT %d %d %d %.1f %.1f %.3f\\n", summary.requests, f + summary.errors.status + summary.errors.timeout + summary.errors.connect + summary.errors.read + summary.errors.write, a,
            latency:percentile(50), latency:percentile(99), summary.duration / 1e6))
        end
        """
    try lua.write(to: script, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["wrk", "-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--timeout", "10s", "-s", script.path, base + path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
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

func format(_ value: Double) -> String { String(format: "%.0f", value) }
func milliseconds(_ micros: Double) -> String { String(format: "%.2f ms", micros / 1_000) }

let options = Options(CommandLine.arguments)
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("server-load-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: folder) }

var storeOptions = AccountStoreOptions()
storeOptions.sync = .durable
let store = try await AccountStore(directory: folder.path, options: storeOptions)
var configuration = AccountServerConfiguration()
configuration.port = 0
let unlimited = RateLimit(burst: 1_000_000, perMinute: 1_000_000)
configuration.rateLimits.loginsPerClient = unlimited
configuration.rateLimits.loginsPerAccount = unlimited
// The load is one client signing up and logging in many times: the per-address limits of a server
// facing the internet would refuse most of it.
configuration.rateLimits.signupsPerClient = unlimited
configuration.rateLimits.recordsPerClient = unlimited
configuration.connections.maxConnectionsPerClient = 100_000
let server = AccountServer(store: store, configuration: configuration)
let (ports, portContinuation) = AsyncStream<Int>.makeStream()
let serving = Task { try await server.run { port in portContinuation.yield(port) } }
guard let port = await ports.first(where: { _ in true }) else { fatalError("the server did not start") }
let base = "http://127.0.0.1:\(port)"

// 64 accounts with the store's default hashing (Argon2id, OWASP), each with a session.
print("signing up \(options.connections) accounts (Argon2id m=19 MiB, t=2, p=1)…")
var tokens: [String] = []
for index in 0..<options.connections {
    var details = AccountDetails()
    details.userId = "load\(index)@example.org"
    details.password = "correct horse battery"
    details.name = PersonNameComponents(givenName: "Load", familyName: "\(index)")
    let created = try await store.signup(details)
    tokens.append(try await store.startSession(for: created.accountId, validity: .seconds(3_600)).token)
}
/// The `account.details-modified` records in the whole log, read in pages.
func loggedModifications() async throws -> Int {
    var count = 0
    var next: UInt64 = 1
    while true {
        let page = try await store.logReader.read(from: next, limit: 10_000)
        guard let last = page.last else { return count }
        count += page.filter { $0.type == "account.details-modified" }.count
        next = last.position + 1
    }
}
let modificationsBefore = try await loggedModifications()

let seconds = options.seconds
let connections = options.connections
print("wrk: \(connections) connections, 2 threads, \(seconds) s per row, durable store, on \(ProcessInfo.processInfo.activeProcessorCount) cores")
let floor = try runWrk(base: base, path: "/health", mode: "read", tokens: tokens, seconds: seconds, connections: connections)
let reads = try runWrk(base: base, path: "/v1/account", mode: "read", tokens: tokens, seconds: seconds, connections: connections)
let mixed = try runWrk(base: base, path: "/v1/account", mode: "mixed", tokens: tokens, seconds: seconds, connections: connections)
let modificationsLogged = try await loggedModifications() - modificationsBefore
let logins = try runWrk(base: base, path: "/v1/sessions", mode: "login", tokens: tokens, seconds: seconds, connections: 8)

// scrypt alone, one thread: the ceiling of logins per core.
let hasher = try PasswordHasher(algorithm: .scrypt(.owaspMinimum))
let hashStart = ContinuousClock.now
let hashCount = 8
for _ in 0..<hashCount { _ = try hasher.hash("correct horse battery") }
let hashElapsed = ContinuousClock.now - hashStart
let hashSeconds = Double(hashElapsed.components.seconds) + Double(hashElapsed.components.attoseconds) / 1e18
let hashesPerSecond = Double(hashCount) / hashSeconds

// Argon2id at OWASP's first choice (m = 19 MiB, t = 2, p = 1), the store's default, one thread.
let argon = try PasswordHasher(algorithm: .argon2id(.owaspMinimum))
let argonStart = ContinuousClock.now
let argonCount = 40
for _ in 0..<argonCount { _ = try argon.hash("correct horse battery") }
let argonElapsed = ContinuousClock.now - argonStart
let argonSeconds = Double(argonElapsed.components.seconds) + Double(argonElapsed.components.attoseconds) / 1e18
let argonPerSecond = Double(argonCount) / argonSeconds

print("")
print("| workload | requests/s | ratio to the floor | p50 | p99 | errors |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for (name, result) in [
    ("GET /health (Hummingbird floor)", floor), ("GET /v1/account", reads), ("80% GET, 20% PATCH /v1/account", mixed),
    ("POST /v1/sessions (8 connections, Argon2id)", logins)
] {
    print(
        "| \(name) | \(format(result.requestsPerSecond)) | \(String(format: "%.2f×", result.requestsPerSecond / floor.requestsPerSecond)) | \(milliseconds(result.p50Micros)) | \(milliseconds(result.p99Micros)) | \(result.errors) |"
    )
}
print("")
print("modifications acknowledged: \(mixed.acknowledgedPatches); in the log: \(modificationsLogged)")
print(String(format: "scrypt (N=2^17, r=8, p=1) on one thread: %.1f hashes/s (%.0f ms each)", hashesPerSecond, 1_000 / hashesPerSecond))
print(
    String(
        format: "Argon2id (m=19 MiB, t=2, p=1) on one thread: %.1f hashes/s (%.0f ms each), %.1f× scrypt's rate", argonPerSecond,
        1_000 / argonPerSecond, argonPerSecond / hashesPerSecond))
let lost = mixed.acknowledgedPatches > modificationsLogged
if lost { print("LOST: acknowledged modifications missing from the log") }

serving.cancel()
await store.close()
exit(lost ? 1 : 0)
