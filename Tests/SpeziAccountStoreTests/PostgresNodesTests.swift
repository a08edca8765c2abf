//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import EventLogProtocol
import Foundation
import SpeziAccount
import SpeziAccountStore
import Synchronization
import TestSupport
import TestTiers
import Testing

/// Options for a node of a shared PostgreSQL log (its key vault is the log's, shared by every node).
func nodeOptions(_ url: String) -> AccountStoreOptions {
    PostgresLogSupport.register()
    var options = AccountStoreOptions()
    options.logLocation = url
    options.passwordParameters = .insecureTesting
    options.allowWeakPasswordParameters = true
    return options
}

@Suite("Several app servers on one PostgreSQL log, each with its own local projections", .integration)
struct PostgresNodesTests {
    init() { PostgresLogSupport.register() }

    @Test("two nodes in one process: what one writes, the other's projections show; a user id stays unique across nodes")
    func twoNodes() async throws {
        let server = try await PostgresServer.start(name: "nodes")
        defer { server.remove() }
        let folders = (0..<2).map { FileManager.default.temporaryDirectory.appendingPathComponent("node-\($0)-\(UUID().uuidString)") }
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        let first = try await AccountStore(directory: folders[0].path, options: nodeOptions(server.url()))
        let second = try await AccountStore(directory: folders[1].path, options: nodeOptions(server.url()))
        #expect(first.log.location.hasPrefix("postgres://postgres@127.0.0.1:"))

        var details = AccountDetails()
        details.userId = "ada@example.org"
        details.password = "correct horse"
        details.name = PersonNameComponents(givenName: "Ada", familyName: "Lovelace")
        let created = try await first.signup(details)
        let head = try await first.log.lastPosition()
        try await second.projections.waitUntilApplied("account-details", position: head)
        #expect(try second.details(of: created.accountId)?.name?.givenName == "Ada")
        #expect(try await second.resolve("ADA@example.org") == created.accountId)

        // The user id is taken on the shared log: the other node refuses it.
        await #expect(throws: AccountServiceError.credentialsTaken) { _ = try await second.signup(details) }

        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Augusta", familyName: "King")
        try await second.modify(created.accountId, try AccountModifications(modifiedDetails: change))
        try await first.projections.waitUntilApplied("account-details", position: try await second.log.lastPosition())
        #expect(try first.details(of: created.accountId)?.name?.givenName == "Augusta")

        try await first.delete(created.accountId)
        let again = try await second.signup(details)
        #expect(again.accountId != created.accountId)
        #expect(try await first.log.verify(progress: nil).isIntact)
        await first.close()
        await second.close()
    }

    @Test("one key vault for every node: sealed on one node, read on the other; shredded on one, unreadable on all; the key is zeros in key_slots")
    func sharedVault() async throws {
        let server = try await PostgresServer.start(name: "vault")
        defer { server.remove() }
        let folders = (0..<3).map { FileManager.default.temporaryDirectory.appendingPathComponent("vault-node-\($0)-\(UUID().uuidString)") }
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        let first = try await AccountStore(directory: folders[0].path, options: nodeOptions(server.url()))
        let second = try await AccountStore(directory: folders[1].path, options: nodeOptions(server.url()))
        #expect(first.accounts.vault != nil && first.accounts.vault?.id == second.accounts.vault?.id)

        var kept: [String] = []
        var doomed: [String] = []
        for index in 0..<6 {
            var details = AccountDetails()
            details.userId = "sealed-\(index)@example.org"
            details.password = "correct horse"
            details.name = PersonNameComponents(givenName: "Secret\(index)Given", familyName: "Secret\(index)Family")
            // Signups alternate between the nodes: each node makes keys the other must find.
            let node = index % 2 == 0 ? first : second
            let id = try await node.signup(details).accountId
            if index < 3 { doomed.append(id) } else { kept.append(id) }
        }
        // Nothing personal is in the clear in the database: every payload is sealed.
        let clear = try await server.psql(
            "SELECT count(*) FROM spezi_account_log.log_records WHERE position(convert_to('Secret', 'UTF8') in payload) > 0")
        #expect(clear.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let sealed = try await server.psql(
            "SELECT count(*) FROM spezi_account_log.log_records WHERE type = 'account.created' AND get_byte(payload, 0) = 2")
        #expect(sealed.trimmingCharacters(in: .whitespacesAndNewlines) == "6")

        try await second.waitUntilCaughtUp()
        try await first.waitUntilCaughtUp()
        for (index, id) in (doomed + kept).enumerated() {
            #expect(try first.details(of: id)?.name?.givenName == "Secret\(index)Given")
            #expect(try second.details(of: id)?.name?.givenName == "Secret\(index)Given")
            #expect(try await second.resolve("SEALED-\(index)@example.org") == id)
        }

        // Deleted on one node: the key is gone for every node, in the database itself.
        for (index, id) in doomed.enumerated() { try await (index % 2 == 0 ? second : first).delete(id) }
        try await first.waitUntilCaughtUp()
        try await second.waitUntilCaughtUp()
        for id in doomed {
            #expect(try first.details(of: id) == nil && second.details(of: id) == nil)
            #expect(try first.accounts.vault?.isShredded(id) == true)
        }
        let zeroed = try await server.psql(
            "SELECT count(*) FROM spezi_account_log.key_slots WHERE get_byte(bytes, 0) = 2 AND substring(bytes from 9 for 32) = decode(repeat('00', 32), 'hex')"
        )
        #expect(zeroed.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        let live = try await server.psql(
            "SELECT count(*) FROM spezi_account_log.key_slots WHERE get_byte(bytes, 0) = 1 AND substring(bytes from 9 for 32) <> decode(repeat('00', 32), 'hex')"
        )
        #expect(live.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        await first.close()
        await second.close()

        // A third node, new, reads the kept accounts and none of the deleted ones.
        let third = try await AccountStore(directory: folders[2].path, options: nodeOptions(server.url()))
        try await third.waitUntilCaughtUp()
        for (offset, id) in kept.enumerated() { #expect(try third.details(of: id)?.name?.givenName == "Secret\(offset + 3)Given") }
        for id in doomed { #expect(try third.details(of: id) == nil) }
        await third.close()

        // The vault's tables gone: a node refuses to start rather than make a new vault.
        _ = try await server.psql("DROP TABLE spezi_account_log.key_slots, spezi_account_log.key_vault")
        await #expect {
            _ = try await AccountStore(directory: folders[2].path, options: nodeOptions(server.url()))
        } throws: { error in
            "\(error)".contains("key_vault and key_slots") && "\(error)".contains("is missing")
        }
    }

    @Test(
        "three processes sign up, modify and delete on one log: gap-free positions, every acknowledged operation logged, unique user ids, caches equal folds, a subscriber saw every record once"
    )
    func threeProcesses() async throws {
        let server = try await PostgresServer.start(name: "three")
        defer { server.remove() }
        let url = server.url()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nodes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }

        // A node of the test's own follows the log while the others write.
        let observer = try await AccountStore(directory: root.appendingPathComponent("observer").path, options: nodeOptions(url))
        let positions = Mutex<[UInt64]>([])
        let seen = Task {
            for try await record in observer.log.subscribeRecords(after: 0, stream: nil, batchSize: 64) {
                positions.withLock { $0.append(record.position) }
            }
        }

        var children: [ChildProcess] = []
        for slot in 0..<3 {
            let process = ChildProcess()
            process.executableURL = builtExecutable("crash-test")
            process.arguments = [
                "child", "--store", root.appendingPathComponent("node-\(slot)").path, "--acks", root.appendingPathComponent("acks-\(slot)").path,
                "--seed", "\(700 + slot)", "--writers", "4", "--slot", "\(slot)", "--slots", "3", "--log", url
            ]
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            children.append(process)
        }
        // A test that ends early (a thrown error, a cancellation) leaves no node writing.
        defer { for child in children where child.isRunning { kill(child.processIdentifier, SIGKILL) } }
        /// Each node's acknowledged operations so far, from its `acks-N` file.
        func acknowledged() -> [[(correlation: String, kind: String, account: String)]] {
            (0..<3).map { slot in
                let text = (try? String(contentsOfFile: root.appendingPathComponent("acks-\(slot)").path, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").compactMap { line in
                    let fields = line.split(separator: " ")
                    return fields.count == 3 ? (String(fields[0]), String(fields[1]), String(fields[2])) : nil
                }
            }
        }
        // The nodes write for at least 6 s, and on until each has acknowledged operations and
        // together more than 30 (opening three stores on PostgreSQL can take seconds under load).
        let started = ContinuousClock.now
        while ContinuousClock.now < started + .seconds(60) {
            let counts = acknowledged().map(\.count)
            if ContinuousClock.now >= started + .seconds(6) && counts.allSatisfy({ $0 > 0 }) && counts.reduce(0, +) > 30 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        for child in children { kill(child.processIdentifier, SIGKILL) }
        let killed = children
        try await offThePool { for child in killed { child.waitUntilExit() } }

        let acks = acknowledged().flatMap { $0 }
        #expect(acks.count > 30, "the nodes acknowledged only \(acks.count) operations")
        #expect(Set(acks.map { $0.correlation.split(separator: "-").first ?? "" }).count == 3, "every node wrote")

        let head = try await observer.log.lastPosition()
        print("three nodes on one PostgreSQL log: \(acks.count) acknowledged operations, \(head) records")
        let report = try await observer.log.verify(progress: nil)
        #expect(report.isIntact, "\(String(describing: report.problem))")
        #expect(report.lastPosition == head && report.recordsChecked == head)

        // Every acknowledged operation is in the log.
        var logged = Set<String>()
        var next: UInt64 = 1
        while next <= head {
            let batch = try await observer.log.read(from: next, limit: 1_000)
            guard let last = batch.last else { break }
            for record in batch { if let id = record.metadata.correlationID { logged.insert(id) } }
            next = last.position + 1
        }
        let missing = acks.filter { !logged.contains($0.correlation) }
        #expect(missing.isEmpty, "\(missing.count) acknowledged operations are missing, e.g. \(missing.prefix(3))")

        // The observer's subscription saw 1…head, each once, in order (it may still be catching up).
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, positions.withLock({ $0.count }) < Int(head) {
            try await Task.sleep(for: .milliseconds(50))
        }
        seen.cancel()
        try await seen.value
        #expect(positions.withLock { $0 } == Array(1...head), "the subscription missed or repeated records")

        // Each node's cache equals the fold of every stream, and no user id has two live owners.
        for name in ["node-0", "node-1", "node-2", "observer"] {
            let node =
                name == "observer" ? observer : try await AccountStore(directory: root.appendingPathComponent(name).path, options: nodeOptions(url))
            try await node.projections.waitUntilApplied("account-details", position: head)
            var cached: [AccountState] = []
            try node.forEachCachedAccount { cached.append($0) }
            var owners: [String: String] = [:]
            for state in cached {
                #expect(try await node.accounts.load(state.accountId) == state, "\(name): cache differs from the fold of \(state.accountId)")
                guard !state.isDeleted else { continue }
                let key = AccountLog.normalizedUserId(state.userId)
                #expect(owners[key] == nil, "\(name): \(state.userId) is live on two accounts")
                owners[key] = state.accountId
                #expect(try await node.accounts.accountId(forUserId: state.userId) == state.accountId)
            }
            let cachedIDs = Set(cached.map(\.accountId))
            let signedUp = Set(acks.filter { $0.kind == "signup" }.map(\.account))
            #expect(signedUp.isSubset(of: cachedIDs), "\(name): \(signedUp.subtracting(cachedIDs).count) acknowledged signups are not cached")
            if name != "observer" { await node.close() }
        }
        await observer.close()
    }
}
