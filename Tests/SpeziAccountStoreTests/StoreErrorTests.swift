//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

/// Errors of the store, the vault and the log transfer that no other test provokes, each asserted
/// by its case and its values.
@Suite("The store's errors, each provoked")
struct StoreErrorTests {
    @Test("unsupportedKeys: a key the service does not store is refused by name; nothing appended")
    func unsupportedKeys() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let keys: [any AccountKey.Type] = [
            AccountDetails.__Key_accountId.self, AccountDetails.__Key_userId.self, AccountDetails.__Key_password.self,
            AccountDetails.__Key_name.self
        ]
        let service = AccountServiceConfiguration(supportedKeys: .exactly(keys)) {
            RequiredAccountKeys {
                \.userId
                \.password
            }
        }
        let store = try await AccountStore(
            directory: fixture.directory.path, service: service, values: [.requires(\.userId), .requires(\.password), .collects(\.name)],
            options: fixture.options())
        var details = leland()
        details.dateOfBirth = nil
        await #expect(throws: AccountStoreError.unsupportedKeys(["genderIdentity"])) { try await store.signup(details) }
        #expect(try await store.log.lastPosition() == 0)
        await store.close()
    }

    @Test("tooMuchContention: one try allowed and another writer first; the refused change appends nothing")
    func contention() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        // Another writer appends to the account between the change's read and its append, once.
        let interloper = Mutex<AccountStore?>(nil)
        let store = try await fixture.open { options in
            options.maxConflictRetries = 1
            options.defences.beforeChangeAppend = { accountId in
                guard let other = interloper.withLock({ $0.take() }) else { return }
                _ = try? await other.accounts.append([.loginFailed(reason: "wrongPassword")], to: accountId, expectedVersion: .any)
            }
        }
        let accountId = try await store.signup(leland()).accountId
        interloper.withLock { $0 = store }
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Refused")
        await #expect(throws: AccountStoreError.tooMuchContention(accountId: accountId, attempts: 1)) {
            try await store.modify(accountId, try AccountModifications(modifiedDetails: change))
        }
        #expect(try await store.log.readStream(accountId, from: 1, limit: 100).map(\.type) == ["account.created", "auth.login-failed"])
        #expect(try store.details(of: accountId)?.name?.givenName == "Leland")
        // With nobody in between, the same change goes through.
        try await store.modify(accountId, try AccountModifications(modifiedDetails: change))
        #expect(try store.details(of: accountId)?.name?.givenName == "Refused")
        await store.close()
    }

    @Test("the vault: a missing vault, a folder in the vault file's place, an account id past 88 bytes")
    func vaultErrors() throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        try FileManager.default.createDirectory(at: fixture.directory, withIntermediateDirectories: true)
        let path = fixture.directory.appendingPathComponent("vault").path
        #expect(throws: KeyVaultError.missing(path: path)) { try KeyVault(path: path, create: false) }
        // A folder where the vault file should be.
        let folder = fixture.directory.appendingPathComponent("a-folder").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(throws: KeyVaultError.cannotOpen(path: folder, errno: EISDIR)) { try KeyVault(path: folder) }
        let vault = try KeyVault(path: path)
        let long = String(repeating: "a", count: 89)
        #expect(throws: KeyVaultError.accountIdTooLong(long)) { try vault.makeKey(for: long) }
        #expect(try vault.hasSlot(long) == false)
        #expect(throws: Never.self) { try vault.makeKey(for: String(repeating: "a", count: 88)) }
        vault.release()
    }

    @Test("an import refuses a line that is not a record, and records out of order, naming the line; nothing is left behind")
    func importErrors() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.cryptoShredding = false }
        try await store.signup(leland())
        try await store.signup(leland(userId: "jane@stanford.edu"))
        let exportURL = fixture.directory.appendingPathComponent("export.jsonl")
        #expect(try await writeExport(of: store.log, to: exportURL) == 2)
        await store.close()
        let lines = try String(contentsOf: exportURL, encoding: .utf8).split(separator: "\n").map(String.init)
        try #require(lines.count == 2)

        let target = fixture.directory.appendingPathComponent("imported").path
        let garbled = fixture.directory.appendingPathComponent("garbled.jsonl")
        try Data((lines[0] + "\n{\"not\": \"a record\"}\n").utf8).write(to: garbled)
        await #expect(throws: LogTransferError.badLine(2, "not an exported record")) {
            try await LogTransfer.importLog(from: garbled, into: target, vault: nil)
        }
        #expect(!FileManager.default.fileExists(atPath: target))

        let swapped = fixture.directory.appendingPathComponent("swapped.jsonl")
        try Data((lines[1] + "\n" + lines[0] + "\n").utf8).write(to: swapped)
        let error = await #expect(throws: LogTransferError.self) { try await LogTransfer.importLog(from: swapped, into: target, vault: nil) }
        guard case let .outOfOrder(line, position, expected) = error else {
            Issue.record("expected outOfOrder, got \(String(describing: error))")
            return
        }
        #expect(line == "line 1" && position == 2 && expected == 1)
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    @Test("storeTransfer: a restore from a folder without a backup, a backup into a folder that is not free")
    func transferErrors() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let empty = fixture.directory.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        await #expect(throws: AccountStoreError.storeTransfer("\(empty) holds no backup (no log/data.mdb)")) {
            try await AccountStore.restore(from: empty, to: fixture.directory.appendingPathComponent("restored").path)
        }
        let store = try await fixture.open()
        try await store.signup(leland())
        let occupied = fixture.directory.appendingPathComponent("occupied")
        try FileManager.default.createDirectory(at: occupied, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: occupied.appendingPathComponent("something"))
        await #expect(throws: (any Error).self) { try await store.backup(to: occupied.path) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: occupied.path) == ["something"], "the folder is left as it was")
        await store.close()
    }
}
