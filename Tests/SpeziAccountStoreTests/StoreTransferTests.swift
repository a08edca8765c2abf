//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccount
import TestSupport
import Testing

@testable import SpeziAccountStore

/// Starts the crash test's workload (signups, changes, deletions, durable) on a store in another
/// process; it runs until killed.
func startWriterProcess(store: URL, seed: Int) throws -> ChildProcess {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("crash-test")
    process.arguments = [
        "child", "--store", store.path, "--acks", store.appendingPathComponent("acks-\(seed).txt").path, "--seed", "\(seed)", "--writers", "2",
        "--slot", "\(seed)", "--slots", "8"
    ]
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// The store as the crash test's workload opens it (durable, cheap hashing).
func openLikeWriters(_ directory: URL) async throws -> AccountStore {
    var options = AccountStoreOptions()
    options.passwordParameters = .insecureTesting
    options.allowWeakPasswordParameters = true
    return try await AccountStore(directory: directory.path, options: options)
}

@Suite("Backups while writers run, restores, and imports that are all or nothing", .serialized)
struct StoreTransferTests {
    @Test("three online backups while another process writes: each verifies, its head is a record the original has, every account reads")
    func onlineBackup() async throws {
        let fixture = StoreFixture()
        let backups = (0..<3).map { _ in FileManager.default.temporaryDirectory.appendingPathComponent("backup-\(UUID().uuidString)") }
        defer {
            fixture.cleanup()
            for backup in backups { try? FileManager.default.removeItem(at: backup) }
        }
        let store = try await openLikeWriters(fixture.directory)
        try await store.signup(leland())
        let writer = try startWriterProcess(store: fixture.directory, seed: 0)
        var reports: [StoreCopyReport] = []
        for backup in backups {
            // Let the other process write between the backups.
            let before = try await store.log.lastPosition()
            while try await store.log.lastPosition() < before + 40 { try await Task.sleep(for: .milliseconds(20)) }
            reports.append(try await store.backup(to: backup.path))
        }
        kill(writer.processIdentifier, SIGKILL)
        writer.waitUntilExit()
        #expect(reports.map(\.lastPosition) == reports.map(\.lastPosition).sorted())
        #expect(reports[0].lastPosition > 40)
        for report in reports {
            await #expect(try store.log.record(at: report.lastPosition)?.hash.description == report.headHash)
            #expect(report.vaultID == store.accounts.vault?.id)
            // A backup is a store: open it, and every live account reads with its user id and name.
            let copy = try await openLikeWriters(URL(fileURLWithPath: report.directory))
            await #expect(try copy.log.verify().isIntact)
            try await copy.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: report.lastPosition)
            var live = 0
            var states: [AccountState] = []
            try copy.forEachCachedAccount { states.append($0) }
            for state in states where !state.isDeleted {
                live += 1
                // An account deleted after the log was copied but before the vault was has its key
                // destroyed in the backup too: crypto-shredding wins over backups. Any other live
                // account must read.
                if try copy.accounts.vault?.isShredded(state.accountId) == true { continue }
                #expect(!state.userId.isEmpty && state.values["name"] != nil, "account \(state.accountId) unreadable in the backup")
            }
            #expect(live > 1)
            await copy.close()
        }
        await store.close()

        // Restore the last one into a new folder: same head, same accounts; the backup is untouched.
        let restored = StoreFixture()
        defer { restored.cleanup() }
        let report = try await AccountStore.restore(from: reports[2].directory, to: restored.directory.path)
        #expect(report.headHash == reports[2].headHash && report.lastPosition == reports[2].lastPosition)
        let reopened = try await openLikeWriters(restored.directory)
        await #expect(try reopened.resolve("lelandstanford@stanford.edu") != nil)
        await reopened.close()
        await #expect(throws: LogTransferError.self) { try await AccountStore.restore(from: reports[2].directory, to: restored.directory.path) }
    }

    @Test("a restore is refused when the backup's vault is missing or not the log's own, and leaves nothing behind")
    func restoreChecksTheVault() async throws {
        let fixture = StoreFixture()
        let other = StoreFixture()
        let backup = StoreFixture()
        let target = StoreFixture()
        defer {
            for f in [fixture, other, backup, target] { f.cleanup() }
        }
        var store = try await fixture.open()
        try await store.signup(leland())
        _ = try await store.backup(to: backup.directory.path)
        await store.close()
        store = try await other.open()
        await store.close()
        let vault = backup.directory.appendingPathComponent("keys/vault")
        try FileManager.default.removeItem(at: vault)
        await #expect(throws: AccountStoreError.self) { try await AccountStore.restore(from: backup.directory.path, to: target.directory.path) }
        try FileManager.default.copyItem(at: other.directory.appendingPathComponent("keys/vault"), to: vault)
        await #expect(throws: AccountStoreError.self) { try await AccountStore.restore(from: backup.directory.path, to: target.directory.path) }
        #expect(!FileManager.default.fileExists(atPath: target.directory.path))
        let parent = target.directory.deletingLastPathComponent()
        // Its own staging folder only: tests running beside it restore into the same parent.
        let staging = ".\(target.directory.lastPathComponent).restoring-"
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).allSatisfy { !$0.hasPrefix(staging) })
    }

    @Test("an import record of a known type whose payload does not decode is an error naming its line, and nothing is imported")
    func undecodableRecordNamesItsLine() async throws {
        let fixture = StoreFixture()
        let target = StoreFixture()
        defer {
            fixture.cleanup()
            target.cleanup()
        }
        let store = try await fixture.open { $0.cryptoShredding = false }
        for index in 0..<3 { try await store.signup(leland(userId: "decode-\(index)@example.org")) }
        let exportURL = fixture.directory.appendingPathComponent("export.jsonl")
        try await writeExport(of: store.log, to: exportURL)
        await store.close()

        // Line 2, an `account.created`, gets a user id cut short: it took no claim before, silently.
        var lines = try String(contentsOf: exportURL, encoding: .utf8).split(separator: "\n").map(String.init)
        var record = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(record["type"] as? String == "account.created")
        record["payload"] = Data([1, 5, 0x61]).base64EncodedString()
        lines[1] = String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self)
        let damaged = fixture.directory.appendingPathComponent("damaged.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: damaged)

        let error = await #expect(throws: LogTransferError.self) {
            _ = try await LogTransfer.importLog(from: damaged, into: target.directory.path, vault: nil)
        }
        guard case let .undecodable(line, position, type, reason) = error else {
            Issue.record("expected an undecodable record, got \(String(describing: error))")
            return
        }
        #expect(line == "line 2" && position == 2 && type == "account.created")
        #expect(reason == PayloadDecodingError.lengthOutOfRange(field: "userId", length: 5, offset: 1).description)
        #expect(error?.description.hasPrefix("line 2: the account.created record at position 2 does not decode") == true)
        #expect(!FileManager.default.fileExists(atPath: target.directory.path))
    }

    @Test("an import that fails on a tampered line leaves no store behind; importing the intact export then works")
    func importIsAllOrNothing() async throws {
        let fixture = StoreFixture()
        let target = StoreFixture()
        defer {
            fixture.cleanup()
            target.cleanup()
        }
        let store = try await fixture.open()
        for index in 0..<5 { try await store.signup(leland(userId: "import-\(index)@example.org")) }
        let exportURL = fixture.directory.appendingPathComponent("export.jsonl")
        try await writeExport(of: store.log, to: exportURL)
        let head = try await store.log.verify().headHash
        await store.close()
        let vault = fixture.directory.appendingPathComponent("keys/vault")

        var lines = try String(contentsOf: exportURL, encoding: .utf8).split(separator: "\n").map(String.init)
        let good = lines
        lines[3] = lines[3].replacingOccurrences(of: "\"actor\"", with: "\"actor_\"").replacingOccurrences(
            of: "\"timestampMicros\":", with: "\"timestampMicros\":1")
        let tampered = fixture.directory.appendingPathComponent("tampered.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: tampered)
        await #expect(throws: LogTransferError.hashMismatch(position: 4)) {
            _ = try await LogTransfer.importLog(from: tampered, into: target.directory.path, vault: vault)
        }
        #expect(!FileManager.default.fileExists(atPath: target.directory.path))
        let parent = target.directory.deletingLastPathComponent()
        // Its own staging folder only: tests running beside it import into the same parent.
        let staging = ".\(target.directory.lastPathComponent).importing-"
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).allSatisfy { !$0.hasPrefix(staging) })

        // Without the vault, a sealed export is refused (its accounts could not be read or claimed).
        await #expect(throws: LogTransferError.missingKey(position: 1, account: try #require(good.first.flatMap(stream(of:))))) {
            _ = try await LogTransfer.importLog(from: exportURL, into: target.directory.path, vault: nil)
        }
        #expect(try await LogTransfer.importLog(from: exportURL, into: target.directory.path, vault: vault) == 5)
        let copy = try await target.open()
        await #expect(try copy.log.verify().headHash == head)
        await #expect(try copy.resolve("import-3@example.org") != nil)
        await copy.close()
    }
}

/// The stream of an exported line.
private func stream(of line: String) -> String? {
    (try? JSONDecoder().decode(ExportedRecord.self, from: Data(line.utf8)))?.stream
}
