//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Projections
import Testing

@testable import SpeziAccountStore

private func json(_ text: String) -> Data { Data(text.utf8) }

@Suite("Account state and schema evolution")
struct AccountStateTests {
    @Test("folding a stream: signup, modify, password, user id, logins, delete")
    func fold() throws {
        let time = Date(timeIntervalSince1970: 1_000)
        var state = try #require(
            AccountState.applying(
                .accountCreated(
                    userId: "leland@stanford.edu", passwordHash: "$scrypt$x", isAnonymous: false,
                    values: ["name": json("{}"), "dateOfBirth": json("0")]),
                to: nil, accountId: "a1", version: 1, at: time))
        state.apply(.detailsModified(modified: ["genderIdentity": json("\"female\"")], removed: ["dateOfBirth"]), version: 2, at: time + 10)
        state.apply(.passwordChanged(passwordHash: "$scrypt$y"), version: 3, at: time + 20)
        state.apply(.userIdChanged(old: "leland@stanford.edu", new: "jane@stanford.edu"), version: 4, at: time + 30)
        state.apply(.loginFailed(reason: "wrongPassword"), version: 5, at: time + 40)
        state.apply(.loginFailed(reason: "wrongPassword"), version: 6, at: time + 41)
        #expect(state.failedLogins == 2)
        #expect(state.updatedAt == time + 30)
        state.apply(.loginSucceeded, version: 7, at: time + 50)
        #expect(state.failedLogins == 0)
        #expect(state.userId == "jane@stanford.edu")
        #expect(state.passwordHash == "$scrypt$y")
        #expect(Set(state.values.keys) == ["name", "genderIdentity"])
        #expect(state.version == 7)
        // The stored form round-trips exactly.
        #expect(try AccountState(encoded: state.encoded()) == state)
        state.apply(.accountDeleted, version: 8, at: time + 60)
        #expect(state.isDeleted && state.values.isEmpty && state.passwordHash == nil)
        #expect(try AccountState(encoded: state.encoded()) == state)
        // Only account.created can start an account.
        #expect(AccountState.applying(.loggedOut, to: nil, accountId: "a2", version: 1, at: time) == nil)
    }

    @Test("a session's start drops the sessions expired by then, and only those")
    func sessionStartPrunesExpired() throws {
        let time = Date(timeIntervalSince1970: 1_000)
        let micros = { (date: Date) in Int64(date.timeIntervalSince1970 * 1_000_000) }
        var state = try #require(
            AccountState.applying(
                .accountCreated(userId: "leland@stanford.edu", passwordHash: "$scrypt$x", isAnonymous: false, values: [:]),
                to: nil, accountId: "a1", version: 1, at: time))
        state.apply(.sessionStarted(sessionHash: "short", expiresAtMicros: micros(time + 10)), version: 2, at: time)
        state.apply(.sessionStarted(sessionHash: "long", expiresAtMicros: micros(time + 100)), version: 3, at: time + 1)
        // Nothing expired yet: every session stays.
        state.apply(.sessionStarted(sessionHash: "third", expiresAtMicros: micros(time + 100)), version: 4, at: time + 9)
        #expect(Set(state.sessions.keys) == ["short", "long", "third"])
        // At its expiry and after, the short one is gone; the others and the new one stay.
        state.apply(.sessionStarted(sessionHash: "fourth", expiresAtMicros: micros(time + 100)), version: 5, at: time + 10)
        #expect(state.sessions == ["long": micros(time + 100), "third": micros(time + 100), "fourth": micros(time + 100)])
        #expect(try AccountState(encoded: state.encoded()) == state)
    }

    @Test("the stored form refuses damaged bytes with an error, never a crash")
    func damagedStoredForm() throws {
        let state = AccountState(accountId: "a", userId: "u", passwordHash: nil, isAnonymous: true, values: ["k": json("1")], version: 1, at: Date())
        let bytes = state.encoded()
        for length in 0..<bytes.count {
            #expect(throws: (any Error).self) { try AccountState(encoded: Array(bytes.prefix(length))) }
        }
    }

    @Test("upcasters rename, retype and remove keys written under older key sets; unknown keys pass through")
    func upcasting() throws {
        var evolution = SchemaEvolution()
        evolution.add(version: 2, .renamed(from: "biography", to: "bio"))
        evolution.add(
            version: 3,
            .retyped("dateOfBirth", label: "ISO date string to seconds") { data in
                let text = try JSONDecoder().decode(String.self, from: data)
                guard let date = ISO8601DateFormatter().date(from: text) else { throw CocoaError(.coderInvalidValue) }
                return try JSONEncoder().encode(date.timeIntervalSince1970)
            })
        evolution.add(version: 4, .removed("faxNumber"))
        #expect(evolution.currentVersion == 4)
        let old: EncodedAccountValues = [
            "biography": json("\"hi\""), "dateOfBirth": json("\"1970-01-02T00:00:00Z\""),
            "faxNumber": json("\"123\""), "futureKey": json("[1,2]")
        ]
        let v1 = try evolution.upcast(old, writtenAt: 1)
        #expect(v1 == ["bio": json("\"hi\""), "dateOfBirth": try JSONEncoder().encode(86_400.0), "futureKey": json("[1,2]")])
        // Written under version 3: only the removal applies.
        let v3 = try evolution.upcast(["dateOfBirth": json("86400"), "faxNumber": json("\"1\"")], writtenAt: 3)
        #expect(v3 == ["dateOfBirth": json("86400")])
        #expect(evolution.upcast(removed: ["biography", "faxNumber", "name"], writtenAt: 1) == ["bio", "name"])
        #expect(throws: SchemaEvolution.UpcastError.self) {
            try evolution.upcast(["dateOfBirth": json("\"not a date\"")], writtenAt: 1)
        }
        #expect(evolution.fingerprint.contains("rename biography->bio"))
    }
}

@Suite("Account log and details projection, on real LMDB files")
struct AccountLogTests {
    struct Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("account-log-\(UUID().uuidString)")
        func openLog() throws -> EventLog {
            var options = EventLogOptions()
            options.sync = .relaxed
            return try EventLog(path: directory.appendingPathComponent("log").path, options: options)
        }
        var projectionsPath: String { directory.appendingPathComponent("projections").path }
        func cleanup() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test("user ids are claimed case-insensitively; the stream folds to the same state as the projection")
    func logAndProjection() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let accounts = AccountLog(log: log)
        try await accounts.append(
            [.accountCreated(userId: "Leland@Stanford.edu", passwordHash: "h", isAnonymous: false, values: ["name": json("{}")])],
            to: "a1", expectedVersion: .noStream, claims: [AccountLog.userIdClaim("Leland@Stanford.edu")])
        await #expect(throws: EventLogError.claimTaken("userid:leland@stanford.edu", owner: "a1")) {
            try await accounts.append(
                [.accountCreated(userId: "leland@stanford.edu ", passwordHash: "h", isAnonymous: false, values: [:])],
                to: "a2", expectedVersion: .noStream, claims: [AccountLog.userIdClaim("leland@stanford.edu ")])
        }
        await #expect(try accounts.accountId(forUserId: "LELAND@stanford.edu") == "a1")
        try await accounts.append(
            [.detailsModified(modified: ["genderIdentity": json("\"male\"")], removed: [])], to: "a1", expectedVersion: .exact(1))
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [AccountDetailsProjection()])
        try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: try log.lastPosition())
        let folded = try await #require(try accounts.load("a1"))
        #expect(try AccountDetailsProjection.state(of: "a1", in: store) == folded)
        #expect(folded.values["genderIdentity"] == json("\"male\""))
        await #expect(try accounts.load("nobody") == nil)
        await store.close()
    }

    @Test("a new upcaster changes the fingerprint: the cache rebuilds itself and shows the renamed key")
    func rebuildAfterSchemaChange() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let oldLog = AccountLog(log: log)
        for index in 0..<50 {
            try await oldLog.append(
                [
                    .accountCreated(
                        userId: "user\(index)", passwordHash: nil, isAnonymous: false,
                        values: ["biography": json("\"bio \(index)\""), "unknownFutureKey": json("true")])
                ],
                to: "a\(index)", expectedVersion: .noStream)
        }
        var store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [AccountDetailsProjection()])
        try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: 50)
        #expect(try AccountDetailsProjection.state(of: "a7", in: store)?.values["biography"] == json("\"bio 7\""))
        #expect(try await store.status().first?.generation == 1)
        await store.close()

        var evolution = SchemaEvolution()
        evolution.add(version: 2, .renamed(from: "biography", to: "bio"))
        let newLog = AccountLog(log: log, evolution: evolution)
        try await newLog.append([.detailsModified(modified: ["bio": json("\"new\"")], removed: [])], to: "a7", expectedVersion: .exact(1))
        store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [AccountDetailsProjection(evolution: evolution)])
        // The rebuild of 50 records may be done before the status is read: it is under way or
        // done, and generation 2 takes over from generation 1.
        let opened = try await store.status().first
        #expect(opened?.rebuilding?.generation == 2 || opened?.generation == 2)
        let deadline = ContinuousClock.now + .seconds(30)
        while try await store.status().first?.generation != 2 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(try await store.status().first?.generation == 2)
        try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: 51)
        let a7 = try #require(try AccountDetailsProjection.state(of: "a7", in: store))
        #expect(a7.values["bio"] == json("\"new\""))
        #expect(a7.values["biography"] == nil)
        #expect(a7.values["unknownFutureKey"] == json("true"))
        #expect(try AccountDetailsProjection.state(of: "a3", in: store)?.values["bio"] == json("\"bio 3\""))
        // The command side folds the same way.
        await #expect(try newLog.load("a7") == a7)
        await store.close()
    }

    @Test("the cache folds streams of every id length (in place within a batch) to the state the command side folds")
    func idLengthsAndInPlaceFolding() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let accounts = AccountLog(log: log)
        // 36 bytes is an account id; 40 is the longest key held inline, 41 the shortest held in an array.
        let ids = [
            "a", String(repeating: "b", count: 36), String(repeating: "c", count: 40), String(repeating: "d", count: 41),
            String(repeating: "e", count: 200)
        ]
        for (index, id) in ids.enumerated() {
            try await accounts.append(
                [.accountCreated(userId: "user\(index)", passwordHash: "h", isAnonymous: false, values: ["genderIdentity": json("\"male\"")])],
                to: id, expectedVersion: .noStream)
        }
        // Interleaved changes: short values (held inside Data) and long ones (slices of the payload).
        for round in 1...4 {
            for (index, id) in ids.enumerated() {
                let long = json("\"" + String(repeating: "x", count: 20 * round + index) + "\"")
                try await accounts.append(
                    [
                        .detailsModified(
                            modified: ["biography": long, "phoneNumber": json("\"\(round)\"")], removed: round == 3 ? ["genderIdentity"] : [])
                    ],
                    to: id, expectedVersion: .exact(UInt64(round)))
            }
        }
        try await accounts.append([.accountDeleted], to: ids[1], expectedVersion: .exact(5))
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [AccountDetailsProjection()])
        try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: try log.lastPosition())
        for (index, id) in ids.enumerated() {
            let cached = try #require(try AccountDetailsProjection.state(of: id, in: store))
            await #expect(try accounts.load(id) == cached)
            #expect(cached.accountId == id && cached.version == (index == 1 ? 6 : 5))
            if index != 1 {
                #expect(cached.values["biography"] == json("\"" + String(repeating: "x", count: 80 + index) + "\""))
                #expect(cached.values["phoneNumber"] == json("\"4\"") && cached.values["genderIdentity"] == nil)
            }
        }
        #expect(try AccountDetailsProjection.state(of: ids[1], in: store)?.isDeleted == true)
        await store.close()
    }
}
