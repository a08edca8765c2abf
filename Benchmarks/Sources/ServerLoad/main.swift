//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// Load on the account server over loopback, with wrk (Debian's `wrk`) as the client:
//   swift run -c release server-load [--seconds 10] [--connections 64] [--peers postgres,sqlite|none]
//                                    [--postgres-connections 20] [--recent-states 4096] [--rounds 5] [--json FILE]
//                                    [--only read,mixed,login] [--login-seconds 20] [--cheap-hash]
// Runs, on one durable store with 64 signed-in accounts:
//   1. GET /health            the framework's floor: Hummingbird answering a fixed JSON (the peer)
//   2. GET /v1/account        a signed-in details read (session check + details cache)
//   3. 80% reads, 20% PATCH   modifications appended durably; afterwards every acknowledged one
//                             must be in the log
//   4. POST /v1/sessions      logins with the store's default Argon2id (bounded by hashing); with
//                             --cheap-hash, every side hashes with a scrypt of no cost and the row
//                             has 64 connections: the login's path without its hash
// and each hash alone on one thread (Argon2id and scrypt at OWASP's parameters), for logins per
// second per core. Prints requests/s, p50 and
// p99, and each row's ratio to the floor measured in the same run.
// Rows 2–4 run, right after the account server's, on the CRUD peer (what a team would write
// instead: the same routes on Hummingbird over an accounts and a sessions table, in PostgreSQL
// and in SQLite, the same password hashing), with the same scripts and connections; a second
// table gives each side's requests/s and p99 and the ratio this / peer.
// Every row runs in interleaved rounds (this project, then each peer, then the next row; the
// whole set again each round, every second round with the peers first), and each run starts on a
// quiet machine (at most 10 % busy, waited for up to 15 s), so that what the run before left
// running is charged to no side: the tables give each row's median round and each
// ratio's median over the rounds with its lowest and highest, and the CPU time each request took
// (the machine's, and this process's) as the median over the rounds.

import AccountServer
import Foundation
import SpeziAccount
import SpeziAccountStore

struct Options {
    var seconds = 10
    /// The login rows' length: at a few dozen logins a second, 10 s is too few for a steady figure.
    var loginSeconds = 20
    /// Every side hashes with a scrypt of no cost (logN 4): what a login costs besides its hash.
    var cheapHash = false
    var connections = 64
    var peers: Set<String> = ["postgres", "sqlite"]
    /// The PostgreSQL peer's pool (postgres-nio's default).
    var postgresConnections = 20
    /// The store's `recentStates` (0: every command and session check decodes the cached state).
    var recentStates = AccountStoreOptions().recentStates
    /// Interleaved rounds of every row.
    var rounds = 5
    /// Where to write the medians and every round as JSON.
    var jsonPath: String?
    /// The rows to run besides the floor (all of them by default).
    var only: Set<String> = ["read", "mixed", "login"]

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--seconds": seconds = iterator.next().flatMap(Int.init) ?? seconds
            case "--connections": connections = iterator.next().flatMap(Int.init) ?? connections
            case "--peers": peers = Set((iterator.next() ?? "").split(separator: ",").map(String.init))
            case "--postgres-connections": postgresConnections = iterator.next().flatMap(Int.init) ?? postgresConnections
            case "--recent-states": recentStates = iterator.next().flatMap(Int.init) ?? recentStates
            case "--rounds": rounds = max(1, min(99, iterator.next().flatMap(Int.init) ?? rounds))
            case "--json": jsonPath = iterator.next()
            case "--login-seconds": loginSeconds = iterator.next().flatMap(Int.init) ?? loginSeconds
            case "--cheap-hash": cheapHash = true
            case "--only": only = Set((iterator.next() ?? "").split(separator: ",").map(String.init))
            default:
                FileHandle.standardError.write(
                    Data(
                        "usage: server-load [--seconds N] [--connections N] [--peers postgres,sqlite|none] [--postgres-connections N] [--recent-states N] [--rounds N] [--json FILE] [--only read,mixed,login] [--login-seconds N] [--cheap-hash]\n"
                            .utf8))
                exit(2)
            }
        }
    }
}

func format(_ value: Double) -> String { String(format: "%.0f", value) }
func milliseconds(_ micros: Double) -> String { String(format: "%.2f ms", micros / 1_000) }
func ratio(_ value: Double, _ reference: Double) -> String { String(format: "%.2f×", value / reference) }

let options = Options(CommandLine.arguments)
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("server-load-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: folder) }

var storeOptions = AccountStoreOptions()
storeOptions.sync = .durable
storeOptions.recentStates = options.recentStates
/// The scrypt of no cost that --cheap-hash gives every side.
let cheapParameters = ScryptParameters(logN: 4, blockSize: 1, parallelism: 1)
if options.cheapHash {
    storeOptions.passwordParameters = cheapParameters
    storeOptions.allowWeakPasswordParameters = true
}
// The per-account change budgets stay on the path (every PATCH is counted against them), set above
// what the load reaches: at the defaults (120 changes an hour), 64 accounts are spent after 7,680
// PATCHes and the rest of the mixed rows would time cheap 429 answers.
storeOptions.limits.changesPerAccountPerHour = 100_000_000
storeOptions.limits.changeBytesPerAccountPerDay = 1 << 40
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
print("signing up \(options.connections) accounts (\(options.cheapHash ? "scrypt of no cost, logN 4" : "Argon2id m=19 MiB, t=2, p=1"))…")
var tokens: [String] = []
for index in 0..<options.connections {
    var details = AccountDetails()
    details.userId = "load\(index)@example.org"
    details.password = "correct horse battery"
    details.name = PersonNameComponents(givenName: "Load", familyName: "\(index)")
    let created = try await store.signup(details)
    // A week: past 100 logins an account ends the sessions that expire first (the login row's
    // last a day), and these tokens must outlive them.
    tokens.append(try await store.startSession(for: created.accountId, validity: .seconds(7 * 86_400)).token)
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

// The CRUD peers, their accounts signed up over HTTP; first, one of each request the load makes
// (and a few it may meet) on both sides, which must answer alike.
print("starting the CRUD peers (\(options.peers.sorted().joined(separator: ", "))) and signing up \(options.connections) accounts on each…")
let peerHasher: PasswordHasher? = options.cheapHash ? try PasswordHasher(parameters: cheapParameters, allowingWeakParameters: true) : nil
let peers = try await startPeers(
    accounts: options.connections, postgresConnections: options.postgresConnections, directory: folder.appendingPathComponent("sqlite-peer"),
    only: options.peers, hasher: peerHasher)
var unfair = false
for peer in peers {
    print("\(peer.name) peer: \(peer.settings)")
    let differences = try await compareAnswers(server: base, serverToken: tokens[0], peer: peer)
    for difference in differences { print("DIFFERENT: \(difference)") }
    unfair = unfair || !differences.isEmpty
    if differences.isEmpty { print("\(peer.name) peer: the same statuses and keys as the account server for the load's requests") }
}
let modificationsBefore = try await loggedModifications()

let seconds = options.seconds
let connections = options.connections
print(
    "wrk: \(connections) connections, 2 threads, \(seconds) s per row (logins \(options.loginSeconds) s), durable store (recentStates \(options.recentStates)), on \(ProcessInfo.processInfo.activeProcessorCount) cores"
)
/// One round of every row: the floor, then each row on the account server and right after on each peer.
struct Round {
    var floor: LoadResult
    var ours: [LoadResult]
    var peers: [[LoadResult]]
}
/// One row of the load: its path, its wrk script's mode, its connections and seconds, and its name
/// in the tables.
typealias Row = (path: String, mode: String, connections: Int, seconds: Int, name: String)
let loginRow: Row =
    options.cheapHash
    ? ("/v1/sessions", "login", connections, options.loginSeconds, "POST /v1/sessions (\(connections) connections, scrypt of no cost)")
    : ("/v1/sessions", "login", 8, options.loginSeconds, "POST /v1/sessions (8 connections, Argon2id)")
let allRows: [Row] = [
    ("/v1/account", "read", connections, seconds, "GET /v1/account"),
    ("/v1/account", "mixed", connections, seconds, "80% GET, 20% PATCH /v1/account"),
    loginRow
]
let rows = allRows.filter { options.only.contains($0.mode) }
var roundResults: [Round] = []
for round in 1...options.rounds {
    if options.rounds > 1 {
        print("round \(round) of \(options.rounds)")
        fflush(nil)
    }
    let floor = try runWrk(base: base, path: "/health", mode: "read", tokens: tokens, seconds: seconds, connections: connections)
    var result = Round(floor: floor, ours: [], peers: peers.map { _ in [] })
    for row in rows {
        // nil: the account server. Every second round the peers go first, in reverse.
        let sides: [Int?] = round % 2 == 1 ? [nil] + peers.indices.map { $0 } : peers.indices.reversed().map { $0 } + [nil]
        for side in sides {
            if let index = side {
                result.peers[index].append(
                    try runWrk(
                        base: peers[index].base, path: row.path, mode: row.mode, tokens: peers[index].tokens, seconds: row.seconds,
                        connections: row.connections))
            } else {
                result.ours.append(
                    try runWrk(base: base, path: row.path, mode: row.mode, tokens: tokens, seconds: row.seconds, connections: row.connections))
            }
        }
    }
    roundResults.append(result)
}
let modificationsLogged = try await loggedModifications() - modificationsBefore
let acknowledgedPatches = roundResults.flatMap { round in zip(rows, round.ours).filter { $0.0.mode == "mixed" }.map { $0.1.acknowledgedPatches } }
    .reduce(0, +)

/// The median of `values` (the lower middle one for an even count).
func median(_ values: [Double]) -> Double { values.sorted()[(values.count - 1) / 2] }
/// The round whose requests/s is the median of `results`.
func medianResult(_ results: [LoadResult]) -> LoadResult {
    let middle = median(results.map(\.requestsPerSecond))
    return results.first { $0.requestsPerSecond == middle } ?? results[0]
}
/// The median of the rounds' ratios, with the lowest and highest.
func ratioOverRounds(_ ours: [LoadResult], _ theirs: [LoadResult]) -> (median: Double, low: Double, high: Double) {
    let ratios = zip(ours, theirs).map { $0.requestsPerSecond / max($1.requestsPerSecond, 1e-9) }
    return (median(ratios), ratios.min() ?? 0, ratios.max() ?? 0)
}
func ratioText(_ ratio: (median: Double, low: Double, high: Double)) -> String {
    options.rounds > 1 ? String(format: "%.2f× (%.2f–%.2f)", ratio.median, ratio.low, ratio.high) : String(format: "%.2f×", ratio.median)
}
let floorRounds = roundResults.map(\.floor)
let floor = medianResult(floorRounds)
let oursRounds = rows.indices.map { row in roundResults.map { $0.ours[row] } }
let peerRounds = peers.indices.map { peer in rows.indices.map { row in roundResults.map { $0.peers[peer][row] } } }
let ourResults = oursRounds.map(medianResult)
let peerResults = peerRounds.map { rowsOfPeer in rowsOfPeer.map(medianResult) }

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
for (name, result) in [("GET /health (Hummingbird floor)", floor)] + zip(rows.map(\.name), ourResults).map({ ($0, $1) }) {
    print(
        "| \(name) | \(format(result.requestsPerSecond)) | \(ratio(result.requestsPerSecond, floor.requestsPerSecond)) | \(milliseconds(result.p50Micros)) | \(milliseconds(result.p99Micros)) | \(result.errors) |"
    )
}
if options.rounds > 1 {
    print("")
    print("| ratio to the floor over \(options.rounds) rounds | median (lowest–highest) |")
    print("| --- | ---: |")
    for (row, name) in rows.map(\.name).enumerated() {
        print("| \(name) | \(ratioText(ratioOverRounds(oursRounds[row], floorRounds))) |")
    }
}
if !peers.isEmpty {
    print("")
    let names = peers.map(\.name)
    print(
        "| workload | this project req/s | p99 | "
            + names.map { "\($0) peer req/s | p99 | this / \($0)" }.joined(separator: " | ") + " | errors (this, " + names.joined(separator: ", ")
            + ") |")
    print("| --- | ---: | ---: | " + names.map { _ in "---: | ---: | ---:" }.joined(separator: " | ") + " | ---: |")
    for (row, (name, ours)) in zip(rows.map(\.name), ourResults).enumerated() {
        let cells = peerResults.indices.map { peer in
            let results = peerResults[peer]
            return
                "\(format(results[row].requestsPerSecond)) | \(milliseconds(results[row].p99Micros)) | \(ratioText(ratioOverRounds(oursRounds[row], peerRounds[peer][row])))"
        }
        let errors = ([ours.errors] + peerResults.map { $0[row].errors }).map(String.init).joined(separator: ", ")
        print(
            "| \(name) | \(format(ours.requestsPerSecond)) | \(milliseconds(ours.p99Micros)) | " + cells.joined(separator: " | ") + " | \(errors) |")
    }
}
// CPU time per request: where a side's extra time goes when its rate is bound by the cores (the
// logins' hashing), and what a request costs when it is not.
print("")
print(
    "| CPU per request, median of the rounds | this project: machine | this process | cores busy | "
        + peers.map { "\($0.name) peer: machine | this process | cores busy" }.joined(separator: " | ") + " |")
print("| --- | ---: | ---: | ---: | " + peers.map { _ in "---: | ---: | ---:" }.joined(separator: " | ") + " |")
func cpuCells(_ results: [LoadResult]) -> String {
    "\(milliseconds(median(results.map(\.machineCPUMicrosPerRequest)))) | \(milliseconds(median(results.map(\.processCPUMicrosPerRequest))))"
        + String(format: " | %.0f %%", median(results.map(\.machineBusy)) * 100)
}
for (row, name) in rows.map(\.name).enumerated() {
    print("| \(name) | \(cpuCells(oursRounds[row])) | " + peers.indices.map { cpuCells(peerRounds[$0][row]) }.joined(separator: " | ") + " |")
}
print("")
let allRuns = floorRounds + oursRounds.flatMap { $0 } + peerRounds.flatMap { $0.flatMap { $0 } }
let unsettled = allRuns.filter { !$0.settled }.count
print(
    String(
        format: "waited for a quiet machine (≤ 10 %% busy) before each of %d runs: median %.2f s, longest %.2f s; %d never got quiet in 15 s",
        allRuns.count, median(allRuns.map(\.settleSeconds)), allRuns.map(\.settleSeconds).max() ?? 0, unsettled))
print("modifications acknowledged: \(acknowledgedPatches); in the log: \(modificationsLogged)")
print(String(format: "scrypt (N=2^17, r=8, p=1) on one thread: %.1f hashes/s (%.0f ms each)", hashesPerSecond, 1_000 / hashesPerSecond))
print(
    String(
        format: "Argon2id (m=19 MiB, t=2, p=1) on one thread: %.1f hashes/s (%.0f ms each), %.1f× scrypt's rate", argonPerSecond,
        1_000 / argonPerSecond, argonPerSecond / hashesPerSecond))
let lost = acknowledgedPatches > modificationsLogged
if lost { print("LOST: acknowledged modifications missing from the log") }
// Errors (a 429 of a spent budget, say) are cheap answers: a row with any times something else.
let ownErrors = oursRounds.flatMap { $0 }.map(\.errors).reduce(0, +)
if ownErrors > 0 { print("INVALID: the account server answered \(ownErrors) requests with errors; its rows count them") }
// A peer that answers errors, or otherwise than the account server, is not a fair peer.
for (peer, results) in zip(peers, peerResults) where results.contains(where: { $0.errors > 0 }) {
    print("UNFAIR: the \(peer.name) peer answered \(results.map(\.errors).reduce(0, +)) requests with errors")
    unfair = true
}

if let jsonPath = options.jsonPath {
    /// One row: each round's requests/s and the median.
    func figure(_ name: String, _ results: [LoadResult]) -> [String: Any] {
        [
            "row": name, "roundsPerSecond": results.map(\.requestsPerSecond), "medianPerSecond": median(results.map(\.requestsPerSecond)),
            "medianMachineCPUMicrosPerRequest": median(results.map(\.machineCPUMicrosPerRequest)),
            "medianProcessCPUMicrosPerRequest": median(results.map(\.processCPUMicrosPerRequest)),
            "roundsMachineCPUMicrosPerRequest": results.map(\.machineCPUMicrosPerRequest), "roundsMachineBusy": results.map(\.machineBusy),
            "roundsSettleSeconds": results.map(\.settleSeconds)
        ]
    }
    var figures = [figure("floor", floorRounds)]
    for (row, name) in rows.map(\.mode).enumerated() {
        figures.append(figure(name, oursRounds[row]))
        for (peer, running) in peers.enumerated() { figures.append(figure("\(name) on the \(running.name) peer", peerRounds[peer][row])) }
    }
    var ratios: [[String: Any]] = []
    for (row, name) in rows.map(\.mode).enumerated() {
        let toFloor = ratioOverRounds(oursRounds[row], floorRounds)
        ratios.append(["row": name, "against": "floor", "median": toFloor.median, "low": toFloor.low, "high": toFloor.high])
        for (peer, running) in peers.enumerated() {
            let value = ratioOverRounds(oursRounds[row], peerRounds[peer][row])
            ratios.append(["row": name, "against": running.name, "median": value.median, "low": value.low, "high": value.high])
        }
    }
    let report: [String: Any] = [
        "command": CommandLine.arguments.joined(separator: " "), "rounds": options.rounds, "seconds": seconds, "loginSeconds": options.loginSeconds,
        "figures": figures, "ratios": ratios
    ]
    try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: jsonPath))
    print("wrote \(jsonPath)")
}

// What was printed reaches the file before the shutdown, which once never ended (a peer's stop).
fflush(nil)
for peer in peers {
    // Every wait has a deadline: a peer that does not stop in 30 s is left to the process's exit.
    // (Unstructured tasks: a task group would wait for a stop that never ends.) The stream ends
    // when the peer has stopped, or yields once when the deadline passes first.
    let (timeout, signal) = AsyncStream<Void>.makeStream()
    Task {
        await peer.stop()
        signal.finish()
    }
    Task {
        try? await Task.sleep(for: .seconds(30))
        signal.yield()
        signal.finish()
    }
    for await _ in timeout {
        print("the \(peer.name) peer did not stop within 30 s; leaving it to the exit")
        break
    }
}
serving.cancel()
await store.close()
// `exit` runs no `defer` of the top-level code.
try? FileManager.default.removeItem(at: folder)
exit(lost || unfair ? 1 : 0)
