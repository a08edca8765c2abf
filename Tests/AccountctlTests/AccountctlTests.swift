//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// What one run of the tool printed and returned.
struct ToolRun {
    let status: Int32
    let stdout: String
    let stderr: String

    /// No crash report, no stack trace, at most one line on standard error.
    var failedCleanly: Bool {
        status != 0 && !stderr.contains("Fatal error") && !stderr.contains("Stack dump")
            && stderr.split(separator: "\n").count == 1 && stderr.hasPrefix("accountctl: ")
    }
}

/// Runs the built `accountctl` next to the test bundle, with fast hashing, on temporary stores.
struct Tool {
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("accountctl")

    let store: URL

    init() throws {
        store = FileManager.default.temporaryDirectory.appendingPathComponent("accountctl-test-\(UUID().uuidString)")
    }

    /// Runs the tool to its end; the wait happens off the cooperative pool.
    /// `environment` is added to this process's (an `LD_PRELOAD` fault shim, say).
    func run(_ arguments: [String], input: String? = nil, withStore: Bool = true, environment: [String: String] = [:]) async throws -> ToolRun {
        try await offThePool { try runBlocking(arguments, input: input, withStore: withStore, extra: environment) }
    }

    private func runBlocking(_ arguments: [String], input: String?, withStore: Bool, extra: [String: String]) throws -> ToolRun {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("accountctl-io-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out")
        let errURL = scratch.appendingPathComponent("err")
        let inURL = scratch.appendingPathComponent("in")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: inURL.path, contents: Data((input ?? "").utf8))

        let process = ChildProcess()
        process.executableURL = Self.binary
        process.arguments = arguments + (withStore ? ["--store", store.path] : [])
        var environment = ProcessInfo.processInfo.environment
        environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] = "1"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let inHandle = try FileHandle(forReadingFrom: inURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inHandle
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        try inHandle.close()
        return ToolRun(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    func remove() {
        try? FileManager.default.removeItem(at: store)
    }
}

@Suite("accountctl", .serialized)
struct AccountctlTests {
    @Test("demo runs twice on one store, prints a history and where the store is; verify and stats then pass")
    func demo() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        let first = try await tool.run(["demo"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("history of account"))
        #expect(first.stdout.contains("account.created"))
        #expect(first.stdout.contains("(redacted)"))
        #expect(first.stdout.contains("store: \(tool.store.standardizedFileURL.path)"))
        let second = try await tool.run(["demo"])
        #expect(second.status == 0, "\(second.stderr)")

        let verify = try await tool.run(["verify"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.contains("intact"))

        let stats = try await tool.run(["stats"])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stdout.contains("accounts:       4 (and 2 deleted)"))
        #expect(stats.stdout.contains("projection account-details: checkpoint"))
        #expect(stats.stdout.contains("records:"))
    }

    @Test("history of a demo account shows its creation and the keys that changed")
    func history() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        let demo = try await tool.run(["demo"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let line = try #require(demo.stdout.split(separator: "\n").first { $0.hasPrefix("signed up ada-") })
        let userId = String(line.split(separator: " ")[2])
        let history = try await tool.run(["history", userId])
        #expect(history.status == 0, "\(history.stderr)")
        #expect(history.stdout.contains("account.created"))
        #expect(history.stdout.contains("account.details-modified"))
        #expect(history.stdout.contains("genderIdentity: (none) → \"female\""))
        #expect(history.stdout.contains("password: (none) → ***"))
        #expect(!history.stdout.contains("scrypt"))
    }

    @Test("errors are one line on standard error with a non-zero status", .integration)
    func errors() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        let missing = try await tool.run(["history", "nobody@example.org"])
        #expect(missing.failedCleanly, "\(missing)")
        #expect(missing.status == 8)
        #expect(missing.stderr.contains("no store at"))
        #expect(!FileManager.default.fileExists(atPath: tool.store.path))

        #expect(try await tool.run(["demo"]).status == 0)
        let badShow = try await tool.run(["show", "no-such-account"])
        #expect(badShow.failedCleanly, "\(badShow)")
        #expect(badShow.status == 3)

        // A PostgreSQL URL as the store folder: refused with what to do, nothing created.
        let url = try await tool.run(["serve", "--store", "postgres://app@127.0.0.1:5432/accounts"], withStore: false)
        #expect(url.failedCleanly, "\(url)")
        #expect(url.status == 2)
        #expect(url.stderr.contains("--store takes a folder"))
        #expect(!FileManager.default.fileExists(atPath: "postgres:"))

        let help = try await tool.run(["--help"], withStore: false)
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stdout.contains("Exit status"))

        let usage = try await tool.run(["show"])
        #expect(usage.failedCleanly, "\(usage)")
        #expect(usage.status == 2)

        let badLogin = try await tool.run(["login", "--user-id", "nobody@example.org", "--password-stdin"], input: "wrong password\n")
        #expect(badLogin.failedCleanly, "\(badLogin)")
        #expect(badLogin.status == 4)
        // A store written by another format version (patched with Python's lmdb, when present).
        let patch = ChildProcess()
        patch.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        patch.arguments = [
            "python3", "-c",
            """
            import lmdb, struct, sys
            env = lmdb.open(sys.argv[1], max_dbs=8)
            meta = env.open_db(b"meta")
            with env.begin(write=True) as txn:
                txn.put(b"format-version", struct.pack(">I", 99), db=meta)
            """, tool.store.appendingPathComponent("log").path
        ]
        let patchErrors = Pipe()
        patch.standardError = patchErrors
        try await offThePool {
            try patch.run()
            patch.waitUntilExit()
        }
        // The patch needs Python's lmdb (Tools/run.sh installs it): a failed patch fails the test.
        let patchOutput = String(decoding: patchErrors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try #require(patch.terminationStatus == 0, "patching the format version failed: \(patchOutput)")
        let foreign = try await tool.run(["verify"])
        #expect(foreign.failedCleanly, "\(foreign)")
        #expect(foreign.status == 6)

        // Something that is not a store at all.
        let garbage = try Tool()
        defer { garbage.remove() }
        try FileManager.default.createDirectory(at: garbage.store.appendingPathComponent("log"), withIntermediateDirectories: true)
        try Data(repeating: 0xAB, count: 64 * 1024).write(to: garbage.store.appendingPathComponent("log/data.mdb"))
        let notAStore = try await garbage.run(["stats"])
        #expect(notAStore.failedCleanly, "\(notAStore)")
    }

    @Test("signup with --password-stdin, then login, show, modify, log and delete")
    func accountCommands() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        // An empty required name is refused, and nothing is signed up.
        let unnamed = try await tool.run(
            ["signup", "--user-id", "leslie@example.org", "--name", "", "--password-stdin"], input: "paxos made simple\n")
        #expect(unnamed.status != 0 && unnamed.stderr.contains("Name"), "\(unnamed.stderr)")
        let signup = try await tool.run(
            ["signup", "--user-id", "leslie@example.org", "--name", "Leslie Lamport", "--password-stdin"],
            input: "paxos made simple\n")
        #expect(signup.status == 0, "\(signup.stderr)")
        let login = try await tool.run(["login", "--user-id", "LESLIE@example.org", "--password-stdin"], input: "paxos made simple\n")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("logged in"))

        let modify = try await tool.run(["modify", "leslie@example.org", "--name", "Leslie B. Lamport"])
        #expect(modify.status == 0, "\(modify.stderr)")
        let show = try await tool.run(["show", "leslie@example.org"])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("Leslie B."))
        #expect(show.stdout.contains("leslie@example.org"))

        let log = try await tool.run(["log", "--json"])
        #expect(log.status == 0, "\(log.stderr)")
        #expect(log.stdout.split(separator: "\n").count == 3)
        #expect(log.stdout.contains("\"type\":\"auth.login-succeeded\""))

        let delete = try await tool.run(["delete", "leslie@example.org"])
        #expect(delete.status == 0, "\(delete.stderr)")
        let again = try await tool.run(["login", "--user-id", "leslie@example.org", "--password-stdin"], input: "paxos made simple\n")
        #expect(again.failedCleanly, "\(again)")
    }

    @Test("export --jsonl, then import into a new store with the vault: the same head hash, user ids resolve, a second import is refused")
    func exportImport() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        let demo = try await tool.run(["demo"])
        #expect(demo.status == 0)
        let userId = try #require(demo.stdout.firstMatch(of: /grace\.hopper-[0-9a-f]+@example\.org/).map { String($0.output) })
        let original = try await tool.run(["verify"])
        #expect(original.status == 0)
        let head = try #require(original.stdout.split(separator: " ").last.map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) })
        let export = tool.store.appendingPathComponent("export.jsonl")
        let exported = try await tool.run(["export", "--jsonl", "--output", export.path])
        #expect(exported.status == 0, "\(exported.stderr)")
        let lines = try String(contentsOf: export, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 6)

        let copy = try Tool()
        defer { copy.remove() }
        let imported = try await copy.run(["import", export.path, "--vault", tool.store.appendingPathComponent("keys/vault").path])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("log intact, head hash \(head)"))
        let verified = try await copy.run(["verify"])
        #expect(verified.stdout.contains(head))
        // The claims were re-made and the sealed details open with the copied vault.
        let history = try await copy.run(["history", userId])
        #expect(history.status == 0, "\(history.stderr)")
        #expect(history.stdout.contains("account.userid-changed"))
        #expect(history.stdout.contains("\"Grace\""))
        let again = try await copy.run(["import", export.path])
        #expect(again.failedCleanly)
        #expect(again.stderr.contains("is not empty"))
        let missing = try await copy.run(["import", "/nonexistent/export.jsonl"])
        #expect(missing.failedCleanly)
    }

    @Test("import --firebase with the project's hash parameters: users keep their UIDs and passwords; a rerun adds nothing")
    func firebaseImport() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        try FileManager.default.createDirectory(at: tool.store, withIntermediateDirectories: true)
        let users = tool.store.appendingPathComponent("users.json")
        let parameters = tool.store.appendingPathComponent("hash.json")
        // Firebase's published example project and user.
        try Data(
            """
            {"users": [
              {"localId": "8KrHjSsPc3TsCJXgwWwXwgtsVTd2", "email": "user1@example.org", "displayName": "Ada Lovelace",
               "passwordHash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
               "salt": "42xEC+ixf3L2lw==", "providerUserInfo": [{"providerId": "password", "rawId": "user1@example.org"}]},
              {"localId": "phoneOnly1", "phoneNumber": "+15555550100", "providerUserInfo": [{"providerId": "phone", "rawId": "+15555550100"}]}
            ]}
            """.utf8
        ).write(to: users)
        try Data(
            """
            {"base64_signer_key": "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
             "base64_salt_separator": "Bw==", "rounds": 8, "mem_cost": 14}
            """.utf8
        ).write(to: parameters)
        let noKey = try await tool.run(["import", "--firebase", users.path])
        #expect(noKey.failedCleanly, "\(noKey)")
        #expect(noKey.stderr.contains("--hash-parameters"))
        let imported = try await tool.run(["import", "--firebase", users.path, "--hash-parameters", parameters.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("skipped phoneOnly1: no way in"))
        #expect(imported.stdout.contains("imported 1 of 2 Firebase users"))
        let again = try await tool.run(["import", "--firebase", users.path, "--hash-parameters", parameters.path])
        #expect(again.stdout.contains("imported 0 of 2 Firebase users"))
        #expect(again.stdout.contains("1 were imported before"))

        let login = try await tool.run(
            ["login", "--user-id", "user1@example.org", "--firebase-hash-parameters", parameters.path, "--password-stdin"],
            input: "user1password\n")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("account 8KrHjSsPc3TsCJXgwWwXwgtsVTd2"))
        let log = try await tool.run(["log", "--json"])
        #expect(log.stdout.contains("\"type\":\"account.password-rehashed\""))
        // Rehashed: the Firebase key is no longer needed.
        let plain = try await tool.run(["login", "--user-id", "user1@example.org", "--password-stdin"], input: "user1password\n")
        #expect(plain.status == 0, "\(plain.stderr)")
    }

    @Test("serve's settings: the command line wins over ACCOUNTCTL_*, which wins over --config; mistakes are refused")
    func serveSettings() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        try FileManager.default.createDirectory(at: tool.store, withIntermediateDirectories: true)
        let config = tool.store.appendingPathComponent("serve.json")
        try Data(
            #"{"port": 9090, "host": "0.0.0.0", "max-body-bytes": 2048, "trusted-proxy": ["10.0.0.0/8", "192.168.0.0/16"], "secure-cookies": true}"#
                .utf8
        ).write(to: config)
        let checked = try await tool.run(
            ["serve", "--config", config.path, "--host", "127.0.0.2", "--check-config"],
            environment: ["ACCOUNTCTL_MAX_BODY_BYTES": "4096", "ACCOUNTCTL_LOG": "postgres://app:hunter2@127.0.0.1:5432/accounts"])
        #expect(checked.status == 0, "\(checked.stderr)")
        let lines = Set(checked.stdout.split(separator: "\n").map(String.init))
        #expect(lines.contains("host = 127.0.0.2  [command line]"))
        #expect(lines.contains("max-body-bytes = 4096  [environment]"))
        #expect(lines.contains("port = 9090  [file]"))
        #expect(lines.contains("trusted-proxy = 10.0.0.0/8, 192.168.0.0/16  [file]"))
        #expect(lines.contains("secure-cookies = true  [file]"))
        #expect(lines.contains("session-seconds = 86400  [default]"))
        // No secret is printed.
        #expect(lines.contains("log = postgres://app:***@127.0.0.1:5432/accounts  [environment]"))
        #expect(!checked.stdout.contains("hunter2"))

        // A typo in the file, a bad value in the environment, a list for a single option: refused, one line.
        let typo = tool.store.appendingPathComponent("typo.json")
        try Data(#"{"prot": 9090}"#.utf8).write(to: typo)
        let refused = try await tool.run(["serve", "--config", typo.path, "--check-config"])
        #expect(refused.failedCleanly && refused.stderr.contains("prot"), "\(refused)")
        let badValue = try await tool.run(["serve", "--check-config"], environment: ["ACCOUNTCTL_PORT": "eighty"])
        #expect(badValue.failedCleanly && badValue.stderr.contains("eighty"), "\(badValue)")
        let list = tool.store.appendingPathComponent("list.json")
        try Data(#"{"port": [1, 2]}"#.utf8).write(to: list)
        let listRefused = try await tool.run(["serve", "--config", list.path, "--check-config"])
        #expect(listRefused.failedCleanly && listRefused.stderr.contains("one value"), "\(listRefused)")
        let missing = try await tool.run(["serve", "--check-config"], environment: ["ACCOUNTCTL_CONFIG": "/nonexistent/serve.json"])
        #expect(missing.failedCleanly && missing.stderr.contains("cannot read"), "\(missing)")
    }
}
