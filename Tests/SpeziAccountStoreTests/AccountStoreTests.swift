//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Projections
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

/// A store in a temporary directory with fast (insecure) password hashing.
struct StoreFixture {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("account-store-\(UUID().uuidString)")

    func options(_ change: (inout AccountStoreOptions) -> Void = { _ in }) -> AccountStoreOptions {
        var options = AccountStoreOptions()
        options.sync = .relaxed
        options.passwordParameters = .insecureTesting
        options.allowWeakPasswordParameters = true
        change(&options)
        return options
    }

    func open(values: AccountValueConfiguration = .default, _ change: (inout AccountStoreOptions) -> Void = { _ in }) async throws -> AccountStore {
        try await AccountStore(directory: directory.path, values: values, options: options(change))
    }

    func cleanup() { try? FileManager.default.removeItem(at: directory) }
}

/// Writes the export of `log` (``LogTransfer/export(_:to:)``) to a new file at `url`.
///
/// - Returns: How many records were written.
@discardableResult
func writeExport(of log: any EventLogBackend, to url: URL) async throws -> UInt64 {
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    let handle = try FileHandle(forWritingTo: url)
    let count = try await LogTransfer.export(log, to: handle)
    try handle.close()
    return count
}

func leland(userId: String = "lelandstanford@stanford.edu", password: String = "StanfordRocks123!") -> AccountDetails {
    var details = AccountDetails()
    details.userId = userId
    details.password = password
    var name = PersonNameComponents()
    name.givenName = "Leland"
    name.familyName = "Stanford"
    details.name = name
    details.genderIdentity = .male
    details.dateOfBirth = Date(timeIntervalSince1970: 0)
    return details
}

@Suite("Account store: commands on the log, reads from projections")
struct AccountStoreTests {
    @Test("signup appends one event, is read-your-writes, and never logs the password")
    func signup() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let details = try await store.signup(leland(), context: .init(actor: "test", correlationID: "req-1"))
        #expect(details.isNewUser)
        #expect(details.password == nil)
        #expect(details.name?.givenName == "Leland")
        // The cache already shows it when signup returns.
        let cached = try #require(try store.details(of: details.accountId))
        #expect(cached.userId == "lelandstanford@stanford.edu")
        #expect(cached.genderIdentity == .male)
        await #expect(try store.resolve("LelandStanford@Stanford.edu") == details.accountId)
        let records = try await store.log.read()
        #expect(records.map(\.type) == ["account.created"])
        #expect(records.first?.metadata.actor == "test")
        #expect(records.first?.metadata.correlationID == "req-1")
        await store.close()
        // No plaintext password anywhere in the files.
        for file in ["log/data.mdb", "projections/data.mdb"] {
            let bytes = try Data(contentsOf: fixture.directory.appendingPathComponent(file))
            #expect(bytes.range(of: Data("StanfordRocks123!".utf8)) == nil, "\(file)")
        }
    }

    @Test("rejected operations append nothing: missing keys, bad values, taken user ids")
    func rejections() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        try await store.signup(leland())
        var missing = leland()
        missing.name = nil
        await #expect(throws: AccountOperationError.missingAccountValue(["Name"])) { try await store.signup(missing) }
        await #expect(throws: AccountOperationError.self) { try await store.signup(leland(userId: "not-an-email")) }
        await #expect(throws: AccountOperationError.self) { try await store.signup(leland(userId: "a@b.c", password: "short")) }
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: "LELANDSTANFORD@stanford.edu")) }
        await #expect(try store.log.lastPosition() == 1)
        await store.close()
    }

    @Test("20 concurrent signups with one user id: exactly one account")
    func concurrentSignups() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let successes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 {
                group.addTask { (try? await store.signup(leland())) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == 1)
        await #expect(try store.log.lastPosition() == 1)
        await store.close()
    }

    @Test("a locked client's refused attempts append nothing and hash nothing; the lock and its count expire together")
    func lockoutIsBounded() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let now = Mutex(Date(timeIntervalSince1970: 1_000_000))
        let store = try await fixture.open {
            $0.clock = { now.withLock { $0 } }
            $0.lockout = (attempts: 3, duration: .seconds(60))
        }
        let id = try await store.signup(leland()).accountId
        let attacker = AccountStore.Context(client: "198.51.100.7")
        for _ in 0..<3 {
            await #expect(throws: AccountServiceError.wrongCredentials) {
                try await store.login(userId: "lelandstanford@stanford.edu", password: "x", context: attacker)
            }
        }
        for attempt in 0..<50 {
            now.withLock { $0 = $0.addingTimeInterval(0.5) }
            await #expect(throws: AccountStoreError.lockedOut(until: Date(timeIntervalSince1970: 1_000_060))) {
                try await store.login(
                    userId: "lelandstanford@stanford.edu", password: attempt.isMultiple(of: 2) ? "x" : "StanfordRocks123!", context: attacker)
            }
        }
        await store.settleBackgroundWrites()
        #expect(try await store.log.readStream(id).map(\.type) == ["account.created"] + Array(repeating: "auth.login-failed", count: 3))
        // After the lock, the client starts afresh: three more wrong tries before the next lock.
        now.withLock { $0 = Date(timeIntervalSince1970: 1_000_061) }
        for _ in 0..<3 {
            await #expect(throws: AccountServiceError.wrongCredentials) {
                try await store.login(userId: "lelandstanford@stanford.edu", password: "x", context: attacker)
            }
        }
        await #expect(throws: AccountStoreError.lockedOut(until: Date(timeIntervalSince1970: 1_000_121))) {
            try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!", context: attacker)
        }
        // The owner, on another address, was never locked out.
        _ = try await store.login(
            userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!", context: AccountStore.Context(client: "203.0.113.9"))
        await store.close()
    }

    @Test("login: success, wrong password (recorded), unknown user, lockout, rehash with stronger parameters")
    func login() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let now = Mutex(Date(timeIntervalSince1970: 1_000_000))
        var store = try await fixture.open {
            $0.clock = { now.withLock { $0 } }
            $0.lockout = (attempts: 3, duration: .seconds(60))
        }
        let created = try await store.signup(leland())
        let loggedIn = try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        #expect(loggedIn.accountId == created.accountId)
        await #expect(throws: AccountServiceError.wrongCredentials) { try await store.login(userId: "nobody@stanford.edu", password: "x") }
        for _ in 0..<3 {
            await #expect(throws: AccountServiceError.wrongCredentials) {
                try await store.login(userId: "lelandstanford@stanford.edu", password: "wrong-password")
            }
        }
        // Locked now (this client, for this user id), even with the right password; the refusal
        // is not recorded and costs no hash.
        await #expect(throws: AccountStoreError.lockedOut(until: Date(timeIntervalSince1970: 1_000_060))) {
            try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        }
        now.withLock { $0 = $0.addingTimeInterval(61) }
        _ = try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        let types = try await store.log.readStream(created.accountId).map(\.type)
        #expect(
            types == [
                "account.created", "auth.login-succeeded", "auth.login-failed", "auth.login-failed", "auth.login-failed",
                "auth.login-succeeded"
            ])
        await store.close()

        // Raising the parameters: the next login stores a new hash.
        store = try await fixture.open {
            $0.passwordParameters = ScryptParameters(logN: 11, blockSize: 8, parallelism: 1)
            $0.clock = { now.withLock { $0 } }
        }
        _ = try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        let last = try await store.log.readStream(created.accountId).suffix(2).map(\.type)
        #expect(last == ["account.password-rehashed", "auth.login-succeeded"])
        let state = try await #require(try store.accounts.load(created.accountId))
        #expect(state.passwordHash?.contains("ln=11") == true)
        await store.close()
    }

    @Test("modify values, user id and password; delete releases the user id")
    func modifyAndDelete() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let id = try await store.signup(leland()).accountId
        var change = AccountDetails()
        change.genderIdentity = .preferNotToState
        change.userId = "leland@stanford.edu"
        change.password = "NewPassword456!"
        var removed = AccountDetails()
        removed.dateOfBirth = Date(timeIntervalSince1970: 0)
        let updated = try await store.modify(id, try AccountModifications(modifiedDetails: change, removedAccountDetails: removed))
        #expect(updated.genderIdentity == .preferNotToState)
        #expect(updated.dateOfBirth == nil)
        #expect(updated.userId == "leland@stanford.edu")
        await #expect(try store.resolve("lelandstanford@stanford.edu") == nil)
        _ = try await store.login(userId: "leland@stanford.edu", password: "NewPassword456!")
        // Another account cannot take the new user id; the old one is free again.
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: "leland@stanford.edu")) }
        let other = try await store.signup(leland()).accountId
        var steal = AccountDetails()
        steal.userId = "leland@stanford.edu"
        await #expect(throws: AccountServiceError.credentialsTaken) {
            try await store.modify(other, try AccountModifications(modifiedDetails: steal))
        }

        try await store.delete(id)
        #expect(try store.details(of: id) == nil)
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await store.login(userId: "leland@stanford.edu", password: "NewPassword456!")
        }
        await #expect(throws: AccountStoreError.accountNotFound(id)) { try await store.delete(id) }
        _ = try await store.signup(leland(userId: "leland@stanford.edu"))
        let types = try await store.log.readStream(id).map(\.type)
        #expect(
            types == [
                "account.created", "account.userid-changed", "account.password-changed", "account.details-modified",
                "auth.login-succeeded", "account.deleted"
            ])
        await store.close()
    }

    @Test("anonymous sign-in, then upgrade keeps the account id")
    func anonymous() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let anonymous = try await store.signInAnonymously()
        #expect(anonymous.isAnonymous && anonymous.isNewUser)
        let upgraded = try await store.upgrade(anonymous.accountId, with: leland())
        #expect(upgraded.accountId == anonymous.accountId)
        #expect(!upgraded.isAnonymous)
        await #expect(try store.resolve("lelandstanford@stanford.edu") == anonymous.accountId)
        await #expect(throws: AccountStoreError.notAnonymous(anonymous.accountId)) {
            try await store.upgrade(anonymous.accountId, with: leland(userId: "x@y.z"))
        }
        await store.close()
    }

    @Test("16 concurrent modifications of one account: each lands once, versions 1...17, no update lost")
    func concurrentModifications() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open(values: AccountValueConfiguration.default)
        let id = try await store.signup(leland()).accountId
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    var change = AccountDetails()
                    var name = PersonNameComponents()
                    name.givenName = "Writer \(index)"
                    change.name = name
                    try await store.modify(id, try AccountModifications(modifiedDetails: change))
                }
            }
            try await group.waitForAll()
        }
        let stream = try await store.log.readStream(id)
        #expect(stream.count == 17)
        #expect(stream.map(\.streamVersion) == Array(1...17))
        // Every writer's change is in the log exactly once.
        let names = try stream.dropFirst().map { record -> String in
            guard case let .detailsModified(modified, _) = try store.accounts.event(from: record), let name = modified["name"] else { return "?" }
            return try JSONDecoder().decode(PersonNameComponents.self, from: name).givenName ?? "?"
        }
        #expect(names.sorted() == (0..<16).map { "Writer \($0)" }.sorted())
        // The cache holds the last one.
        #expect(try store.details(of: id)?.name?.givenName == names.last)
        await store.close()
    }

    @Test("a reopened store serves the same details; a rebuilt cache equals the live one")
    func reopenAndRebuild() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        var ids: [String] = []
        for index in 0..<20 { ids.append(try await store.signup(leland(userId: "user\(index)@stanford.edu")).accountId) }
        var change = AccountDetails()
        change.genderIdentity = .female
        try await store.modify(ids[3], try AccountModifications(modifiedDetails: change))
        try await store.delete(ids[4])
        let before = try ids.map { try store.details(of: $0) }
        await store.close()
        store = try await fixture.open()
        #expect(try ids.map { try store.details(of: $0) } == before)
        try await store.projections.rebuild(AccountDetailsProjection.projectionName)
        #expect(try await store.projections.status().first?.generation == 2)
        #expect(try ids.map { try store.details(of: $0) } == before)
        #expect(try store.details(of: ids[3])?.genderIdentity == .female)
        #expect(try store.details(of: ids[4]) == nil)
        await store.close()
    }
}
