//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Session checks answer from the states decoded last only while they are current")
struct SessionCheckTests {
    @Test("a kept state is brought up to date: a change, a logout and a deletion, also by another store, are seen at once")
    func keptStatesFollowTheLog() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let id = try await store.signup(leland(userId: "sessions@example.org")).accountId
        let session = try await store.startSession(for: id, validity: .seconds(600))

        let first = try await store.authenticate(token: session.token)
        #expect(first.accountId == id)
        let version = try #require(try await store.log.streamVersion(id))
        #expect(first.version == version)
        #expect(store.recentStates.state(of: id) == first)
        #expect(try await store.authenticate(token: session.token) == first)

        // Events the store did not see being written (appended to the log directly, as another
        // process sharing it would): the kept state is behind, and is brought up to date.
        _ = try await store.accounts.append([.loginFailed(reason: "wrongPassword")], to: id, expectedVersion: .exact(version))
        #expect(store.recentStates.state(of: id)?.version == version)
        let behind = try await store.currentState(of: id)
        #expect(behind?.version == version + 1)
        #expect(behind?.failedLogins == first.failedLogins + 1)
        #expect(store.recentStates.state(of: id)?.version == version + 1)
        #expect(behind == (try await store.accounts.load(id)))

        // A change: the state is the fold's.
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Jane", familyName: "Stanford")
        _ = try await store.modify(id, try AccountModifications(modifiedDetails: change))
        let changed = try await store.authenticate(token: session.token)
        #expect(changed == (try await store.accounts.load(id)))
        #expect(try store.details(from: changed).name?.givenName == "Jane")

        // A second session, then the first one ended: the ended token is refused at once.
        let second = try await store.startSession(for: id, validity: .seconds(600))
        _ = try await store.authenticate(token: session.token)
        try await store.endSession(token: session.token)
        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: session.token) }
        #expect(try await store.authenticate(token: second.token).accountId == id)

        // A deletion ends every session, and what was kept of the account is dropped; ids that
        // cannot be streams are no accounts.
        #expect(store.recentStates.state(of: id) != nil)
        try await store.delete(id)
        #expect(store.recentStates.state(of: id) == nil)
        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: second.token) }
        #expect(store.recentStates.state(of: id) == nil)
        #expect(try await store.currentState(of: id)?.isDeleted == true)
        #expect(try await store.currentState(of: "") == nil)
        #expect(try await store.currentState(of: "bad\u{0}id") == nil)
        #expect(try await store.currentState(of: String(repeating: "x", count: 401)) == nil)
        #expect(try await store.currentState(of: "no-such-account") == nil)
    }

    @Test("a rendering is made once for each version of an account's state, and goes with that state")
    func renderings() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let id = try await store.signup(leland(userId: "renderings@example.org")).accountId
        let session = try await store.startSession(for: id, validity: .seconds(600))
        var made = 0
        func render(_ state: AccountState) throws -> String {
            try store.rendering(of: state, as: "test") { details in
                made += 1
                return "\(details.name?.givenName ?? "-") at \(state.version)"
            }
        }

        let first = try await store.authenticate(token: session.token)
        #expect(try render(first) == "Leland at \(first.version)")
        #expect(try render(first) == "Leland at \(first.version)")
        #expect(made == 1)
        // Another name is another rendering.
        #expect(try store.rendering(of: first, as: "other") { $0.userId } == "renderings@example.org")

        // A change is a new version: rendered again, from the new details.
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Jane", familyName: "Stanford")
        let modified = try await store.modifiedState(id, try AccountModifications(modifiedDetails: change))
        // The command keeps the state it made: the next check starts from it.
        #expect(store.recentStates.state(of: id) == modified)
        #expect(try render(modified) == "Jane at \(modified.version)")
        let changed = try await store.authenticate(token: session.token)
        #expect(changed == modified)
        #expect(changed.version > first.version)
        #expect(try render(changed) == "Jane at \(changed.version)")
        #expect(try render(changed) == "Jane at \(changed.version)")
        #expect(made == 2)
        // An older state is rendered as it was, but nothing is kept for it.
        #expect(try render(first) == "Leland at \(first.version)")
        #expect(try render(first) == "Leland at \(first.version)")
        #expect(made == 4)
        #expect(store.recentStates.rendering(of: changed, as: "test", String.self) == "Jane at \(changed.version)")
        // An older state offered later does not replace the newer one (nor its renderings).
        store.recentStates.keep(first)
        #expect(store.recentStates.state(of: id) == changed)
        #expect(try render(changed) == "Jane at \(changed.version)")
        #expect(made == 4)

        // A deletion drops the state and its renderings (crypto-shredding leaves nothing in memory).
        try await store.delete(id)
        #expect(store.recentStates.rendering(of: changed, as: "test", String.self) == nil)
        #expect(store.recentStates.rendering(of: first, as: "other", String.self) == nil)
    }

    @Test("a token splits at its last dot, byte by byte; look-alike and malformed tokens are refused")
    func tokenParsing() async throws {
        let secret = String(repeating: "A", count: 43)
        let parsed = try #require(BearerSecret.parseSessionToken("acc.ount.\(secret)"))
        #expect(parsed.accountId == "acc.ount")
        // The session's hash is SHA-256 of the secret, in lowercase hexadecimal, as when it was issued.
        #expect(parsed.sessionHash == BearerSecret.hash(secret))
        #expect(parsed.sessionHash == "0f007385b6f9d4b7eeb2748605afe1a984a0a3bfa3f014d09e2a784ce9e5cd1a")
        #expect(BearerSecret.parseSessionToken("é.\(secret)")?.accountId == "é")
        for token in [
            secret, ".\(secret)", "account.\(secret.dropLast())", "account.\(secret)A", "account.",
            "account.\u{301}\(secret.dropLast())",  // a combining mark after the dot: 44 bytes of secret
            "account." + String(repeating: "A", count: 470)
        ] {
            #expect(BearerSecret.parseSessionToken(token) == nil, "\(token.prefix(20))")
        }

        // A whole check refuses a look-alike of a real token.
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let id = try await store.signup(leland(userId: "tokens@example.org")).accountId
        let token = try await store.startSession(for: id, validity: .seconds(600)).token
        #expect(try await store.authenticate(token: token).accountId == id)
        let dot = try #require(token.utf8.lastIndex(of: UInt8(ascii: ".")))
        let secretPart = String(token[token.utf8.index(after: dot)...])
        // 43 bytes after the dot, the first two a combining mark: parsed, then not found.
        let lookAlike = String(token[..<dot]) + ".\u{301}" + String(secretPart.dropFirst(2))
        #expect(BearerSecret.parseSessionToken(lookAlike)?.accountId == id)
        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: lookAlike) }
        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: String(token.dropLast()) + "\u{301}") }
    }

    @Test("the memory is bounded: a full set makes room for each new account")
    func bounded() {
        let states = RecentStates(capacity: 3)
        let kept = (0..<5).map { index in
            AccountState(
                accountId: "account-\(index)", userId: "user\(index)@example.org", passwordHash: nil, isAnonymous: false, values: [:],
                version: 1, at: Date(timeIntervalSince1970: 0))
        }
        for state in kept { states.keep(state) }
        #expect(states.count == 3)
        #expect(states.state(of: "account-4") == kept[4])
        #expect(RecentStates(capacity: 0).count == 0)
    }

    @Test("with recentStates 0 nothing is kept, and checks answer the same")
    func turnedOff() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.recentStates = 0 }
        let id = try await store.signup(leland(userId: "nothing-kept@example.org")).accountId
        let session = try await store.startSession(for: id, validity: .seconds(600))
        #expect(try await store.authenticate(token: session.token).accountId == id)
        let state = try await store.authenticate(token: session.token)
        #expect(state.accountId == id)
        #expect(store.recentStates.count == 0)
        // No rendering is kept either: each one is made again.
        var made = 0
        for _ in 0..<2 { _ = try store.rendering(of: state, as: "test") { _ in made += 1 } }
        #expect(made == 2)
        try await store.endSession(token: session.token)
        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: session.token) }
    }
}
