//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

/// An account keeps at most `maxOpenSessionsPerAccount` sessions open: a sign-in past the limit
/// gets in and ends the sessions that expire first, in its own append.
@Suite("Open sessions per account are bounded; the owner always gets in")
struct SessionLimitTests {
    /// The reasons of the `auth.session-ended` events in the account's stream, by session hash.
    static func endings(_ store: AccountStore, _ accountId: String) async throws -> [String: String] {
        var endings: [String: String] = [:]
        for record in try await store.log.readStream(accountId, from: 1, limit: 10_000) where record.type == "auth.session-ended" {
            guard case let .sessionEnded(hash, reason) = try store.accounts.event(from: record) else { continue }
            endings[hash] = reason
        }
        return endings
    }

    static func hash(of session: AccountSession) -> String {
        BearerSecret.hash(String(session.token.split(separator: ".").last ?? ""))
    }

    @Test("a sign-in past the limit ends the session that expires first, in the sign-in's own append")
    func signInEndsTheFirstToExpire() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.limits.maxOpenSessionsPerAccount = 3 }
        let details = leland(userId: "limit@example.org")
        let id = try await store.signup(details).accountId
        // Three open sessions; the one of 100 s expires first, though it was not opened first.
        let long = try await store.startSession(for: id, validity: .seconds(300))
        let short = try await store.startSession(for: id, validity: .seconds(100))
        let middle = try await store.startSession(for: id, validity: .seconds(200))
        let before = try await store.log.lastPosition()

        let (_, newest) = try await store.startSession(userId: "limit@example.org", password: details.password!, validity: .seconds(50))

        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: short.token) }
        for session in [long, middle, newest] { #expect(try await store.authenticate(token: session.token).accountId == id) }
        let state = try #require(try await store.currentState(of: id))
        #expect(state.sessions.count == 3)
        #expect(Set(state.sessions.keys) == Set([long, middle, newest].map(Self.hash)))
        // The ending came with the sign-in: one append, one ending, with its reason.
        let appended = try await store.log.read(from: before + 1, limit: 100).map(\.type)
        #expect(appended.filter { $0 == "auth.login-succeeded" }.count == 1)
        #expect(appended.filter { $0 == "auth.session-started" }.count == 1)
        #expect(appended.filter { $0 == "auth.session-ended" }.count == 1)
        #expect(appended.last == "auth.session-ended")
        #expect(try await Self.endings(store, id) == [Self.hash(of: short): AccountStore.sessionLimitReason])
        await store.close()
    }

    @Test("the default limit of 100: the 101st session ends the first; with no limit, none ends")
    func defaultLimitAndNone() async throws {
        for limit in [100, nil] as [Int?] {
            let fixture = StoreFixture()
            defer { fixture.cleanup() }
            let store = try await fixture.open { if limit == nil { $0.limits.maxOpenSessionsPerAccount = nil } }
            #expect(store.options.limits.maxOpenSessionsPerAccount == limit)
            let id = try await store.signup(leland(userId: "many@example.org")).accountId
            var sessions: [AccountSession] = []
            // Each later one expires later (validities grow by a second).
            for index in 0..<101 { sessions.append(try await store.startSession(for: id, validity: .seconds(1_000 + index))) }
            let state = try #require(try await store.currentState(of: id))
            if limit == nil {
                #expect(state.sessions.count == 101)
                #expect(try await Self.endings(store, id).isEmpty)
            } else {
                #expect(state.sessions.count == 100)
                #expect(try await Self.endings(store, id) == [Self.hash(of: sessions[0]): AccountStore.sessionLimitReason])
                await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: sessions[0].token) }
                #expect(try await store.authenticate(token: sessions[1].token).accountId == id)
            }
            await store.close()
        }
    }

    @Test("sign-ins released together: the account ends with exactly the limit open, every other one ended")
    func concurrentSignIns() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open {
            $0.limits.maxOpenSessionsPerAccount = 4
            $0.maxConflictRetries = 64
        }
        let id = try await store.signup(leland(userId: "together@example.org")).accountId
        let opened = try await withThrowingTaskGroup(of: AccountSession.self) { group in
            for index in 0..<24 { group.addTask { try await store.startSession(for: id, validity: .seconds(600 + index)) } }
            return try await group.reduce(into: [AccountSession]()) { $0.append($1) }
        }
        #expect(opened.count == 24)
        let state = try #require(try await store.currentState(of: id))
        #expect(state.sessions.count == 4)
        let endings = try await Self.endings(store, id)
        #expect(endings.count == 20)
        #expect(endings.values.allSatisfy { $0 == AccountStore.sessionLimitReason })
        // Every session handed out is either open or ended for the limit, never both.
        for session in opened {
            let hash = Self.hash(of: session)
            #expect((state.sessions[hash] != nil) != (endings[hash] != nil))
        }
        await store.close()
    }
}
