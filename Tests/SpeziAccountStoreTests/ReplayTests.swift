//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import Projections
import SpeziAccount
import TestSupport
import TestTiers
import Testing

@testable import SpeziAccountStore

/// Every account's state in the serving generation of the details cache.
func cachedStates(_ store: AccountStore) throws -> [String: AccountState] {
    var states: [String: AccountState] = [:]
    try store.forEachCachedAccount { states[$0.accountId] = $0 }
    return states
}

/// Every account's state folded straight from its stream.
func foldedStates(_ store: AccountStore, ids: some Sequence<String>) async throws -> [String: AccountState] {
    var states: [String: AccountState] = [:]
    for id in ids { states[id] = try await store.accounts.load(id) }
    return states
}

@Suite("Replays: randomized workloads, restarts and old logs, on real LMDB files")
struct ReplayTests {
    static let passwordMarker = "Pw-Secret-"

    struct Member: Sendable {
        let id: String
        let userId: String
        let password: String
    }

    /// One worker's share of the randomized workload: `operations` random commands on its own accounts.
    static func work(on store: AccountStore, accounts: [Member], operations: Int, seed: UInt64) async throws -> Int {
        var random = SplitMix64(seed: seed)
        var ids = accounts.map(\.id)
        var passwords = Dictionary(uniqueKeysWithValues: accounts.map { ($0.id, $0.password) })
        var userIds = Dictionary(uniqueKeysWithValues: accounts.map { ($0.id, $0.userId) })
        var done = 0
        for step in 0..<operations {
            guard !ids.isEmpty else { break }
            let id = ids[Int.random(in: 0..<ids.count, using: &random)]
            let dice = Int.random(in: 0..<100, using: &random)
            switch dice {
            case 0..<45:
                var change = AccountDetails()
                var removed = AccountDetails()
                change.name = PersonNameComponents(givenName: "Given \(step)", familyName: "Family \(dice)")
                if Bool.random(using: &random) {
                    change.genderIdentity = [.female, .male, .transgender, .nonBinary][Int.random(in: 0..<4, using: &random)]
                }
                if Bool.random(using: &random) {
                    removed.dateOfBirth = Date()
                } else {
                    change.dateOfBirth = Date(timeIntervalSince1970: Double(Int.random(in: 0..<1_000_000_000, using: &random)))
                }
                try await store.modify(id, try AccountModifications(modifiedDetails: change, removedAccountDetails: removed))
            case 45..<55:
                let newUserId = "user-\(seed)-\(step)@example.org"
                var change = AccountDetails()
                change.userId = newUserId
                try await store.modify(id, try AccountModifications(modifiedDetails: change))
                userIds[id] = newUserId
            case 55..<60:
                let password = "\(passwordMarker)\(id)-\(step)"
                var change = AccountDetails()
                change.password = password
                try await store.modify(id, try AccountModifications(modifiedDetails: change))
                passwords[id] = password
            case 60..<75:
                _ = try await store.login(userId: try #require(userIds[id]), password: try #require(passwords[id]))
            case 75..<88:
                await #expect(throws: AccountServiceError.wrongCredentials) {
                    try await store.login(userId: try #require(userIds[id]), password: "wrong-\(step)")
                }
            case 88..<95:
                try await store.logout(id)
            default:
                try await store.delete(id)
                ids.removeAll { $0 == id }
            }
            done += 1
        }
        return done
    }

    @Test(
        "10,000 random operations over 1,000 accounts: cache = fold of every stream = rebuilt cache; no plaintext password in any file", .integration)
    func randomizedWorkload() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        // Lockout off: the random failed logins must not lock accounts out of the later successful ones.
        // scrypt at its cheapest: this test is about replay, not hashing cost.
        let store = try await fixture.open(values: storeSeedConfiguration) {
            $0.lockout = (attempts: .max, duration: .seconds(0))
            $0.passwordParameters = ScryptParameters(logN: 4, blockSize: 1, parallelism: 1)
        }
        var members: [Member] = []
        for index in 0..<1_000 {
            let userId = "member\(index)@stanford.edu"
            let password = "\(Self.passwordMarker)\(index)"
            members.append(
                Member(id: try await store.signup(leland(userId: userId, password: password)).accountId, userId: userId, password: password))
        }
        let ids = members.map(\.id)
        let workers = 4
        let share = members.count / workers
        let operations = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                let mine = Array(members[(worker * share)..<((worker + 1) * share)])
                group.addTask { try await Self.work(on: store, accounts: mine, operations: 2_250, seed: UInt64(worker + 1)) }
            }
            return try await group.reduce(members.count, +)
        }
        #expect(operations >= 10_000)
        // Failed logins are recorded after their answers.
        await store.settleBackgroundWrites()
        let head = try await store.log.lastPosition()
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: head)

        let incremental = try cachedStates(store)
        #expect(incremental.count == 1_000)
        #expect(incremental.values.contains { $0.isDeleted })
        #expect(incremental.values.contains { $0.failedLogins > 0 })
        await #expect(try foldedStates(store, ids: ids) == incremental)

        try await store.projections.rebuild(AccountDetailsProjection.projectionName)
        #expect(try await store.projections.status().first { $0.name == AccountDetailsProjection.projectionName }?.generation == 2)
        #expect(try cachedStates(store) == incremental)
        await store.close()

        let marker = Data(Self.passwordMarker.utf8)
        var scanned = 0
        for file in ["log/data.mdb", "projections/data.mdb"] {
            let bytes = try Data(contentsOf: fixture.directory.appendingPathComponent(file))
            scanned += bytes.count
            #expect(bytes.range(of: marker) == nil, "a plaintext password in \(file)")
        }
        #expect(scanned > 1_000_000)
    }

    @Test("a restart resumes the projections from their checkpoints: no event applied twice, none skipped")
    func restartResumes() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        let ids = (0..<50).map { "acct-\($0)" }
        // Failed logins are counters in the cached state: applying one twice or skipping one shows.
        for id in ids {
            try await store.accounts.append(
                [.accountCreated(userId: "\(id)@example.org", passwordHash: nil, isAnonymous: false, values: [:])],
                to: id, expectedVersion: .noStream)
        }
        for round in 0..<40 {
            for id in ids where (round + id.count) % 3 != 0 {
                try await store.accounts.append([.loginFailed(reason: "wrongPassword")], to: id, expectedVersion: .any)
            }
        }
        let head = try await store.log.lastPosition()
        // Close as soon as the cache has started, mid catch-up (or after it, if it was quicker).
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: 60)
        await store.close()

        store = try await fixture.open()
        let resumedFrom = try #require(try await store.projections.status().first { $0.name == AccountDetailsProjection.projectionName })
        #expect(resumedFrom.checkpoint >= 60)
        #expect(resumedFrom.generation == 1)
        // More events while it runs, then compare with the fold of every stream.
        for id in ids.prefix(10) {
            try await store.accounts.append([.loginFailed(reason: "wrongPassword")], to: id, expectedVersion: .any)
        }
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: head + 10)
        let cached = try cachedStates(store)
        await #expect(cached == (try foldedStates(store, ids: ids)))
        #expect(cached.values.map(\.failedLogins).reduce(0, +) == Int(head) - ids.count + 10)
        #expect(try await store.projections.status().first { $0.name == AccountDetailsProjection.projectionName }?.generation == 1)
        await store.close()
    }

    @Test("a log written under key set v1 replays into v2 exactly: renamed, retyped and removed keys; unknown keys kept")
    func oldLogIntoNewKeys() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        func json(_ text: String) -> Data { Data(text.utf8) }
        // Version 1 of the app: "nickname", a date of birth as an ISO string, a fax number.
        var store = try await fixture.open()
        for index in 0..<20 {
            let values: EncodedAccountValues = [
                "nickname": json("\"nick \(index)\""), "dateOfBirth": json("\"1990-05-\(String(format: "%02d", index + 1))T00:00:00Z\""),
                "faxNumber": json("\"+1 650 000 \(index)\""), "fromTheFuture": json("{\"x\":\(index)}")
            ]
            try await store.accounts.append(
                [.accountCreated(userId: "v1-\(index)@example.org", passwordHash: nil, isAnonymous: false, values: values)],
                to: "v1-\(index)", expectedVersion: .noStream)
        }
        try await store.accounts.append(
            [.detailsModified(modified: ["nickname": json("\"renamed later\"")], removed: ["faxNumber"])],
            to: "v1-3", expectedVersion: .exact(1))
        await store.close()

        // Version 2: nickname became biography, dates are real dates, the fax number is gone.
        var evolution = SchemaEvolution()
        evolution.add(version: 2, .renamed(from: "nickname", to: "biography"))
        evolution.add(
            version: 2,
            .retyped("dateOfBirth", label: "ISO-8601 string to Date") { data in
                let text = try JSONDecoder().decode(String.self, from: data)
                guard let date = ISO8601DateFormatter().date(from: text) else { throw CocoaError(.coderInvalidValue) }
                return try JSONEncoder().encode(date)
            })
        evolution.add(version: 2, .removed("faxNumber"))
        store = try await fixture.open {
            $0.evolution = evolution
            $0.additionalKeys = [AccountDetails.__Key_biography.self]
        }
        try await store.projections.rebuild(AccountDetailsProjection.projectionName)
        let cached = try cachedStates(store)
        #expect(cached.count == 20)
        for index in 0..<20 {
            let date = try #require(ISO8601DateFormatter().date(from: "1990-05-\(String(format: "%02d", index + 1))T00:00:00Z"))
            let expected: EncodedAccountValues = [
                "biography": json(index == 3 ? "\"renamed later\"" : "\"nick \(index)\""),
                "dateOfBirth": try JSONEncoder().encode(date),
                "fromTheFuture": json("{\"x\":\(index)}")
            ]
            #expect(cached["v1-\(index)"]?.values == expected)
            let details = try #require(try store.details(of: "v1-\(index)"))
            #expect(details.biography == (index == 3 ? "renamed later" : "nick \(index)"))
            #expect(details.dateOfBirth == date)
            #expect(details.unknownValues.keys.sorted() == ["fromTheFuture"])
        }
        // New events are written under v2 and read back unchanged.
        var change = AccountDetails()
        change.biography = "written by v2"
        try await store.modify("v1-5", try AccountModifications(modifiedDetails: change))
        await #expect(try store.log.read(from: try store.log.lastPosition()).first?.metadata.extra["keys-version"] == "2")
        #expect(try store.details(of: "v1-5")?.biography == "written by v2")
        await store.close()
    }
}
