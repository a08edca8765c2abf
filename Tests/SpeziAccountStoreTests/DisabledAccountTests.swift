//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Accounts an administrator disabled")
struct DisabledAccountTests {
    static let apple = LinkedIdentity(issuer: "https://appleid.apple.com", subject: "001234.dis.0001")

    /// Whether `error` is the answer a locked (or disabled) account gets.
    static func isLockedOut(_ error: any Error) -> Bool {
        if case AccountStoreError.lockedOut = error { return true }
        return false
    }

    @Test("disabling ends the sessions and refuses sign-in as a locked account; enabling lets it in again")
    func disableThenEnable() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let accountId = try await store.signup(leland()).accountId
        let (_, session) = try await store.startSession(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!", validity: .seconds(600))
        try await store.link(Self.apple, to: accountId)

        let ended = try await store.disable(accountId, reason: "a support ticket", context: .init(actor: "admin:grace"))
        #expect(ended == 1)
        #expect(try await store.isDisabled(accountId))
        await #expect(throws: AccountStoreError.invalidSession) { try await store.authenticate(token: session.token) }
        // The right password: locked, before anything is appended; a wrong one: as any wrong one
        // (no oracle for the disabled state).
        let head = try await store.log.lastPosition()
        await #expect {
            try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        } throws: { error in
            Self.isLockedOut(error)
        }
        #expect(try await store.log.lastPosition() == head, "a refused sign-in of a disabled account appended nothing")
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await store.login(userId: "lelandstanford@stanford.edu", password: "not the password")
        }
        await #expect {
            try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(60))
        } throws: { error in
            Self.isLockedOut(error)
        }
        // A second disable changes nothing.
        #expect(try await store.disable(accountId, reason: "again") == nil)

        #expect(try await store.enable(accountId, reason: "resolved"))
        #expect(!(try await store.isDisabled(accountId)))
        #expect(!(try await store.enable(accountId, reason: "again")))
        _ = try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        _ = try await store.startSession(identity: Self.apple, newUserId: nil, validity: .seconds(60))

        await store.settleBackgroundWrites()
        let records = try await store.log.readStream(accountId, from: 1, limit: 100)
        let disabled = try #require(records.first { $0.type == "account.disabled" })
        #expect(disabled.metadata.actor == "admin:grace")
        #expect(try store.accounts.event(from: disabled) == .accountDisabled(reason: "a support ticket"))
        #expect(records.filter { $0.type == "account.disabled" }.count == 1)
        #expect(records.contains { $0.type == "account.enabled" })
        await store.close()
    }

    @Test("a session started while the account is disabled is ended at once; deletion releases the claim")
    func raceAndDeletion() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let accountId = try await store.signup(leland()).accountId
        try await store.disable(accountId, reason: "fraud check")
        // A login that passed the first check before the disable committed: the check after its
        // append ends the session it opened.
        let events: [AccountEvent] = [.sessionStarted(sessionHash: String(repeating: "ab", count: 32), expiresAtMicros: Int64.max)]
        _ = try await store.accounts.append(events, to: accountId, expectedVersion: .any)
        await #expect {
            try await store.refuseIfDisabled(accountId, after: events, context: .init())
        } throws: { error in
            Self.isLockedOut(error)
        }
        let state = try #require(try await store.accounts.load(accountId))
        #expect(state.sessions.isEmpty)

        try await store.delete(accountId)
        #expect(!(try await store.isDisabled(accountId)))
        await #expect(throws: AccountStoreError.accountNotFound(accountId)) { try await store.disable(accountId, reason: "late") }
        await store.close()
    }

    @Test("an import makes the disabled claim again: the imported account is still disabled")
    func importKeepsDisabled() async throws {
        let fixture = StoreFixture()
        let target = StoreFixture()
        defer {
            fixture.cleanup()
            target.cleanup()
        }
        let store = try await fixture.open { $0.cryptoShredding = false }
        let disabled = try await store.signup(leland(userId: "disabled@example.org")).accountId
        let enabledAgain = try await store.signup(leland(userId: "enabled@example.org")).accountId
        try await store.disable(disabled, reason: "fraud check")
        try await store.disable(enabledAgain, reason: "fraud check")
        try await store.enable(enabledAgain, reason: "cleared")
        let exportURL = fixture.directory.appendingPathComponent("export.jsonl")
        try await writeExport(of: store.log, to: exportURL)
        await store.close()

        _ = try await LogTransfer.importLog(from: exportURL, into: target.directory.path, vault: nil)
        let imported = try await target.open { $0.cryptoShredding = false }
        #expect(try await imported.isDisabled(disabled))
        #expect(!(try await imported.isDisabled(enabledAgain)))
        await #expect {
            try await imported.login(userId: "disabled@example.org", password: "StanfordRocks123!")
        } throws: { error in
            Self.isLockedOut(error)
        }
        await imported.close()
    }
}
