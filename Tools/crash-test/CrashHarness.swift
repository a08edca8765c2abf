//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccountStore
import TestSupport

/// What the power-loss undos changed on disk over the rounds, measured on the files' bytes
/// (`PowerLoss.Outcome`).
struct PowerLossTally {
    var rounds = 0
    /// The rounds whose undo changed at least one byte.
    var roundsChanged = 0
    /// Files whose bytes the undo changed, counted once per round.
    var filesChanged = 0
    var bytesChanged = 0
    /// The writes the shim journaled (what it recorded, not what the undo changed).
    var journaledWrites = 0

    mutating func add(_ outcome: PowerLoss.Outcome) {
        rounds += 1
        if outcome.bytesChanged > 0 { roundsChanged += 1 }
        filesChanged += outcome.filesChanged
        bytesChanged += outcome.bytesChanged
        journaledWrites += outcome.journaledWrites
    }
}

/// What the rounds found.
struct CrashSummary {
    var crashes = 0
    /// With power loss: what the undos after the kills changed on disk.
    var powerLoss: PowerLossTally?
    /// The control run: the store did not flush, and the check must see losses.
    var control = false
    var acknowledged = 0
    /// Everything found lost: acknowledged operations not in the log, and what the log's
    /// operations must have left (a deleted account's destroyed key, a readable account).
    var lost = 0
    /// The acknowledged operations whose events are not in the log.
    var notInLog = 0
    var mismatches = 0
    var records: UInt64 = 0
    var accounts = 0
    /// With a rebuilder: the chunks its rebuilds read in two parts at once and wrote (a chunk
    /// cut short by a kill is not counted).
    var twoPartChunks: Int?
    /// The rounds whose kill clock started after such a chunk, and those that waited for one in vain.
    var roundsAfterTwoPartChunk = 0
    var twoPartWaitsInVain = 0
    /// Kills of a writer process that landed after it acknowledged an operation in that round (in
    /// the middle of its work, not while it opened the store).
    var killsAfterAcknowledgement = 0
    /// The rounds that waited for a first acknowledgement in vain: the workload ended before it.
    var acknowledgementWaitsInVain = 0
    /// Deletions in the log whose key was checked destroyed after the reopen.
    var deletionsCheckedShredded = 0
    /// Accounts found marked for shredding (key not yet destroyed) after a kill: the kill landed
    /// between the deletion's start and the key's destruction. The reopen settles each.
    var killedBeforeShredding = 0
    var problems: [String] = []

    var report: String {
        var lines = [
            "crashes: \(crashes)",
            "operations acknowledged: \(acknowledged)",
            "lost: \(lost)",
            "mismatches: \(mismatches)",
            "log records: \(records), accounts: \(accounts)"
        ]
        if let powerLoss {
            lines.insert(
                "bytes rolled back (power loss): \(powerLoss.bytesChanged) in \(powerLoss.filesChanged) files, in \(powerLoss.roundsChanged) of \(powerLoss.rounds) rounds (\(powerLoss.journaledWrites) writes journaled)",
                at: 1)
        }
        if control {
            lines.append(
                notInLog > 0
                    ? "control run (the store did not flush): \(notInLog) of \(acknowledged) acknowledged operations not in the log, as expected"
                    : "control run (the store did not flush): every acknowledged operation is in the log; the check cannot see losses")
        }
        lines.append("kills after an acknowledgement: \(killsAfterAcknowledgement) (waits for one in vain: \(acknowledgementWaitsInVain))")
        lines.append(
            "deletions checked shredded: \(deletionsCheckedShredded); accounts killed between deletion and key destruction: \(killedBeforeShredding)")
        if let twoPartChunks {
            lines.append("rebuild chunks read in two parts: \(twoPartChunks)")
            lines.append("rounds killed after a two-part chunk: \(roundsAfterTwoPartChunk) (waited in vain: \(twoPartWaitsInVain))")
        }
        lines += problems.prefix(20).map { "problem: \($0)" }
        return lines.joined(separator: "\n")
    }

    /// Why the run failed, or nil. A power-loss run fails when its undos never changed a byte
    /// (the undo is broken, or the shim did not load: nothing was cut); the control run fails
    /// unless it saw acknowledged operations lost (its mismatches are expected: the projections
    /// flush, the log does not).
    var failure: String? {
        if let powerLoss, powerLoss.bytesChanged == 0 {
            return "no power cut changed a byte on disk in \(powerLoss.rounds) rounds: the undo is broken or the shim did not load"
        }
        if control { return notInLog > 0 ? nil : "the control run lost nothing: the check cannot see lost writes" }
        if lost > 0 || mismatches > 0 { return "\(lost) lost, \(mismatches) mismatches" }
        return nil
    }
}

/// Runs the child, kills it, and checks the store after every kill.
struct CrashHarness {
    let directory: String
    let writers: Int
    var random: SplitMix64
    let seed: UInt64
    /// The child's environment: under the fault shim when power losses are simulated.
    let childEnvironment: [String: String]?
    /// Writer processes, and whether a rebuilding process runs beside them.
    let processes: Int
    let rebuilder: Bool
    /// The control run: the workload's store does not flush (`sync: .relaxed`), under the power-loss shim.
    let noFlush: Bool
    /// Ends the run when a round makes no progress for its limit.
    let watchdog: ProgressWatchdog
    /// Test only: the writer processes stop before they open the store.
    var stallingChildren = false
    /// Records per transaction of the rebuilding process.
    var rebuildChunk = 512
    /// The rebuilding process's file of chunks read in two parts, a line each, in the store folder.
    static let twoPartChunksFile = "two-part-chunks.txt"
    /// Each writer process acknowledges into a file of its own.
    func ackPath(_ slot: Int) -> String { directory + (slot == 0 ? "/acks.txt" : "/acks-\(slot).txt") }
    /// The correlation ids found in the log so far, and the log position read up to.
    private var logged: Set<String> = []
    private var readUpTo: UInt64 = 0

    /// With `controlNoFlush`, power losses are simulated whatever `powerLoss` says. `progressLimit`
    /// is how long a step of a round may go without progress (see ``ProgressWatchdog``).
    init(
        directory: String, writers: Int, seed: UInt64, powerLoss: Bool = false, controlNoFlush: Bool = false, processes: Int = 1,
        rebuilder: Bool = false, progressLimit: Duration = .seconds(60)
    ) throws {
        self.processes = processes
        self.rebuilder = rebuilder
        self.noFlush = controlNoFlush
        self.watchdog = ProgressWatchdog(limit: progressLimit)
        self.childEnvironment =
            powerLoss || controlNoFlush ? try FaultShim.environment(["IOFAULT_FILES": "data.mdb,vault", "IOFAULT_POWER_LOSS": "1"]) : nil
        self.directory = directory
        self.writers = writers
        self.seed = seed
        self.random = SplitMix64(seed: seed)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Counted for this run only (a store folder may be used again).
        try? FileManager.default.removeItem(atPath: directory + "/" + Self.twoPartChunksFile)
    }

    mutating func run(crashes: Int, progress: (Int, CrashSummary) -> Void) async throws -> CrashSummary {
        var summary = CrashSummary()
        summary.control = noFlush
        for round in 1...max(crashes, 1) {
            try await crashOnce(round: round, summary: &summary)
            try await check(&summary, round: round, rebuild: round == crashes)
            progress(round, summary)
        }
        watchdog.end()
        return summary
    }

    /// Starts the workload, lets it run for a random 20–250 ms, and kills it with SIGKILL. With
    /// several processes, each is killed at its own moment after 100–600 ms. In every third round
    /// the delays start at the first acknowledgement (of the first process) instead: the other
    /// rounds may kill the processes while they open or recover the store, and on a loaded machine
    /// that can take all of the delay, so these rounds make sure that kills also land in the middle
    /// of the work.
    /// Likewise, with a rebuilder reading chunks in two parts, every other round starts the delays
    /// once it has written such a chunk. In the control run every round waits for an
    /// acknowledgement: each cut then comes after acknowledged writes that were not flushed.
    private mutating func crashOnce(round: Int, summary: inout CrashSummary) async throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let acknowledgedBefore = Self.fileSize(ackPath(0))
        // Each writer's ack file before this round's processes start: a kill after it grew
        // landed after an acknowledgement of this round.
        let acknowledgedAtStart = (0..<processes).map { Self.fileSize(ackPath($0)) }
        let chunksBefore = Self.fileSize(directory + "/" + Self.twoPartChunksFile)
        var children: [(process: ChildProcess, errors: Pipe)] = []
        for slot in 0..<processes {
            let childSeed = processes == 1 ? seed &+ UInt64(round) : seed &+ UInt64(round) &* 1_000 &+ UInt64(slot)
            children.append(
                try start(
                    executable,
                    [
                        "child", "--store", directory, "--acks", ackPath(slot), "--seed", "\(childSeed)", "--writers", "\(writers)",
                        "--slot", "\(slot)", "--slots", "\(processes)"
                    ] + (noFlush ? ["--no-flush"] : []) + (stallingChildren ? ["--stall"] : [])))
        }
        if rebuilder { children.append(try start(executable, ["rebuild-child", "--store", directory, "--chunk", "\(rebuildChunk)"])) }
        watchdog.watch(children: children.map(\.process.processIdentifier))
        let names = children.indices.map { index in
            "\(index < processes ? "writer process \(index)" : "the rebuild process") (pid \(children[index].process.processIdentifier))"
        }
        let single = children.count == 1
        var delays = children.map { _ in single ? 20 + Int(random.next() % 231) : 100 + Int(random.next() % 501) }
        if round % 3 == 0 || noFlush {
            watchdog.begin("round \(round): \(names[0]) acknowledged nothing")
            try await waitForAcknowledgement(beyond: acknowledgedBefore, of: children[0].process)
            if Self.fileSize(ackPath(0)) <= acknowledgedBefore { summary.acknowledgementWaitsInVain += 1 }
        }
        // 8,192: the smallest chunk a rebuild reads in two parts (twice Projections' minimum part).
        if rebuilder && rebuildChunk >= 8_192 && round % 2 == 0 {
            // As with a single process: every other round starts the delays once the rebuilder read
            // a chunk in two parts, so that kills also land among those, not only in its start.
            let path = directory + "/" + Self.twoPartChunksFile
            watchdog.begin("round \(round): \(names[names.count - 1]) read no chunk in two parts")
            try await waitForLine(beyond: chunksBefore, in: path, of: children[children.count - 1].process)
            if Self.fileSize(path) > chunksBefore {
                summary.roundsAfterTwoPartChunk += 1
            } else {
                summary.twoPartWaitsInVain += 1
            }
        }
        watchdog.begin("round \(round): killing the children")
        var elapsed = 0
        while let next = delays.enumerated().filter({ $0.element >= 0 }).min(by: { $0.element < $1.element }) {
            try await Task.sleep(for: .milliseconds(next.element - elapsed))
            elapsed = next.element
            if next.offset < processes, Self.fileSize(ackPath(next.offset)) > acknowledgedAtStart[next.offset] {
                summary.killsAfterAcknowledgement += 1
            }
            kill(children[next.offset].process.processIdentifier, SIGKILL)
            delays[next.offset] = -1
        }
        for (index, (process, errors)) in children.enumerated() {
            watchdog.begin("round \(round): \(names[index]) did not end after its SIGKILL")
            try await offThePool { process.waitUntilExit() }
            if process.terminationReason == .exit {
                let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                summary.mismatches += 1
                summary.problems.append("round \(round): a workload stopped by itself (\(process.terminationStatus)): \(message)")
            }
        }
        summary.crashes += 1
        if rebuilder {
            let lines = FileManager.default.contents(atPath: directory + "/" + Self.twoPartChunksFile).map { $0.count { $0 == UInt8(ascii: "\n") } }
            summary.twoPartChunks = lines ?? 0
        }
        if childEnvironment != nil {
            // The ack file is the clients' memory, not the store's: it is not watched and keeps all.
            watchdog.begin("round \(round): undoing the unflushed writes")
            let outcome = try PowerLoss.strike(directory)
            summary.powerLoss = summary.powerLoss ?? PowerLossTally()
            summary.powerLoss?.add(outcome)
        }
    }

    /// Waits until the workload's ack file grew past `size` (it acknowledged an operation), or until
    /// the workload ended by itself (the caller reports that). The watchdog ends a wait that makes
    /// no progress.
    private func waitForAcknowledgement(beyond size: UInt64, of process: ChildProcess) async throws {
        try await waitForLine(beyond: size, in: ackPath(0), of: process)
    }

    /// Waits until the file at `path` grew past `size`, or until `process` ended.
    private func waitForLine(beyond size: UInt64, in path: String, of process: ChildProcess) async throws {
        while Self.fileSize(path) <= size, process.isRunning {
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// The file's length, 0 when it is missing (`stat`: this runs every 2 ms while a round waits).
    private static func fileSize(_ path: String) -> UInt64 {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_size) : 0
    }

    private func start(_ executable: URL, _ arguments: [String]) throws -> (ChildProcess, Pipe) {
        let process = ChildProcess()
        process.executableURL = executable
        process.arguments = arguments
        if let childEnvironment { process.environment = childEnvironment }
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        return (process, errors)
    }

    /// Reopens the store and checks it against the acknowledgements and a replay of the log.
    private mutating func check(_ summary: inout CrashSummary, round: Int, rebuild: Bool) async throws {
        watchdog.watch(children: [])
        watchdog.begin("round \(round): the check: reading the acknowledgements and the key vault")
        let acks = readAcks()
        summary.acknowledged = acks.count
        let signedUp = Set(acks.filter { $0.kind == "signup" }.map(\.account))
        // Before the reopen settles them: accounts whose key is marked for shredding but not yet
        // destroyed (a kill between the deletion's start and the key's destruction).
        var marked: [String] = []
        let vaultPath = directory + "/keys/vault"
        if FileManager.default.fileExists(atPath: vaultPath) {
            let vault = try KeyVault(path: vaultPath, create: false)
            marked = try signedUp.filter { try vault.isShredded($0) && vault.key(for: $0) != nil }
            vault.release()
        }
        summary.killedBeforeShredding += marked.count
        watchdog.begin("round \(round): the check: opening the store")
        let store = try await openStore(directory)
        let head = try await store.log.lastPosition()
        summary.records = head

        // Every acknowledged operation left its events (found by their correlation ids).
        watchdog.begin("round \(round): the check: reading the log")
        var next = readUpTo + 1
        while true {
            watchdog.progressed()
            let batch = try await store.log.read(from: next, limit: 4_096)
            guard let last = batch.last else { break }
            for record in batch { if let id = record.metadata.correlationID { logged.insert(id) } }
            next = last.position + 1
        }
        readUpTo = head
        let lost = acks.filter { !logged.contains($0.correlation) }
        summary.lost = lost.count
        summary.notInLog = lost.count
        summary.problems += lost.prefix(5).map { "acknowledged \($0.kind) \($0.correlation) of \($0.account) is not in the log" }

        watchdog.begin("round \(round): the check: verifying the log")
        let report = try await store.log.verify()
        if !report.isIntact {
            summary.mismatches += 1
            summary.problems.append("verify: \(report.problem.map(String.init(describing:)) ?? "?")")
        }

        watchdog.begin("round \(round): the check: waiting for the details cache to reach position \(head)")
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: head)
        if rebuild {
            watchdog.begin("round \(round): the check: rebuilding the details cache")
            try await store.projections.rebuild(AccountDetailsProjection.projectionName) { [watchdog] _, _ in watchdog.progressed() }
        }
        watchdog.begin("round \(round): the check: comparing the details cache with the log")
        var userIds: [String: String] = [:]
        var accounts = 0
        var live = ""
        var cachedStates: [AccountState] = []
        try store.forEachCachedAccount { cachedStates.append($0) }
        for cached in cachedStates {
            watchdog.progressed()
            accounts += 1
            if !cached.isDeleted { live += "\(cached.accountId) \(cached.userId)\n" }
            let folded = try await store.accounts.load(cached.accountId)
            if folded != cached {
                summary.mismatches += 1
                summary.problems.append("account \(cached.accountId): the cache differs from the fold of its stream")
            }
            guard !cached.isDeleted else { continue }
            let claim = AccountLog.userIdClaim(cached.userId)
            if let other = userIds[claim] {
                summary.mismatches += 1
                summary.problems.append("user id \(cached.userId) belongs to \(other) and \(cached.accountId)")
            }
            userIds[claim] = cached.accountId
            if try await store.accounts.accountId(forUserId: cached.userId) != cached.accountId {
                summary.mismatches += 1
                summary.problems.append("the claim of \(cached.userId) does not point to \(cached.accountId)")
            }
        }
        // Crypto-shredding after real kills: every deleted account's key is destroyed (an
        // acknowledged deletion, and one whose kill came between its commit and the key's
        // destruction), and an account marked for shredding whose deletion never reached the log
        // has its key back.
        if let vault = store.accounts.vault {
            let deleted = Set(cachedStates.filter(\.isDeleted).map(\.accountId))
            for accountId in deleted where try vault.hasSlot(accountId) {
                summary.deletionsCheckedShredded += 1
                if try vault.key(for: accountId) != nil {
                    summary.lost += 1
                    summary.problems.append("deleted account \(accountId) still has its key")
                }
            }
            for accountId in acks.filter({ $0.kind == "delete" }).map(\.account) where !deleted.contains(accountId) {
                summary.lost += 1
                summary.problems.append("acknowledged deletion of \(accountId) is not in the cache")
            }
            for accountId in marked where try !deleted.contains(accountId) && vault.key(for: accountId) == nil {
                summary.lost += 1
                summary.problems.append("account \(accountId) was not deleted, but its key is gone")
            }
        }
        // Every acknowledged account is readable: in the cache, and unless it was deleted, with
        // its user id and name (a lost key would show it redacted).
        let unreadable = try signedUp.filter { id in
            guard let state = try store.cachedState(of: id) else { return true }
            return !state.isDeleted && (state.userId.isEmpty || state.values["name"] == nil)
        }
        summary.lost += unreadable.count
        summary.problems += unreadable.prefix(5).map { "acknowledged account \($0) is missing or unreadable" }
        summary.accounts = accounts
        try Data(live.utf8).write(to: URL(fileURLWithPath: directory + "/live.txt"), options: .atomic)
        watchdog.begin("round \(round): the check: closing the store")
        await store.close()
    }

    struct Ack {
        let correlation: String
        let kind: String
        let account: String
    }

    /// The complete lines of the ack file (a kill can leave a partial last line: not acknowledged).
    private func readAcks() -> [Ack] {
        (0..<processes).flatMap { slot -> [Ack] in
            guard let data = FileManager.default.contents(atPath: ackPath(slot)) else { return [] }
            var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            lines.removeLast()  // empty after a final newline, or a partial line
            return lines.compactMap { line in
                let fields = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
                return fields.count == 3 ? Ack(correlation: fields[0], kind: fields[1], account: fields[2]) : nil
            }
        }
    }
}
