//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

/// User ids that look alike collide (UTS #39 skeletons, through ICU); scripts mixed in one part and
/// stacks of combining marks are refused; accounts made before the rules keep signing in.
@Suite("look-alike user ids")
struct LookAlikeUserIdTests {
    /// The look-alikes an attacker tried, each beside the user id it imitates.
    static let lookAlikes: [(String, String)] = [
        ("асе", "ace"),  // Cyrillic, whole script
        ("օ", "o"),  // Armenian
        ("հ", "h"),  // Armenian
        ("Ꭺ", "a"),  // Cherokee
        ("ꓮ", "a"),  // Lisu
        ("ס", "o"),  // Hebrew
        ("ı", "i"),  // dotless i
        ("i\u{307}x", "ix"),  // i with a combining dot above
        ("ɡ", "g"),  // Latin script g
        ("ɑ", "a"),  // Latin alpha
        ("ᴏ", "o"),  // small capital
        ("rn", "m")
    ]

    @Test("each look-alike has the skeleton of the user id it imitates; distinct user ids keep distinct skeletons")
    func skeletons() {
        for (alike, original) in Self.lookAlikes {
            #expect(!Self.skeletons(alike).isDisjoint(with: Self.skeletons(original)), "\(alike) / \(original)")
        }
        #expect(Self.skeletons("ada@example.org").isDisjoint(with: Self.skeletons("eda@example.org")))
        #expect(Self.skeletons("ADA@Example.org") == Self.skeletons("ada@example.org"))
        #expect(Self.skeletons("ada@example.org").count == 1)
    }

    static func skeletons(_ userId: String) -> Set<String> {
        UserIdNormalization.skeletons(userId)
    }

    @Test("scripts mixed in one part and stacks of combining marks are refused; one script per part is taken")
    func refusals() {
        #expect(UserIdNormalization.refusal(of: "pаypal@example.org") == .mixedScript)  // a Cyrillic а among Latin letters
        #expect(UserIdNormalization.refusal(of: "ada@exаmple.org") == .mixedScript)
        #expect(UserIdNormalization.refusal(of: "a" + String(repeating: "\u{301}", count: 150) + "@example.org") == .combiningMarks)
        #expect(UserIdNormalization.refusal(of: "a\u{301}\u{300}@example.org") == nil)
        #expect(UserIdNormalization.refusal(of: "δοκιμή@παράδειγμα.gr") == nil)
        #expect(UserIdNormalization.refusal(of: "山田@example.jp") == nil)
        #expect(UserIdNormalization.refusal(of: "асе@example.org") == nil)  // one script: taken, unless it looks like another
    }

    static func details(_ userId: String) -> AccountDetails {
        var details = AccountDetails()
        details.userId = userId
        details.password = "correct horse"
        details.name = PersonNameComponents(givenName: "Ada")
        return details
    }

    @Test("a store gives one account to each look-alike group: signup, upgrade and change of user id are refused")
    func storeRefusesLookAlikes() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        for (alike, original) in Self.lookAlikes {
            let taken = try await store.signup(Self.details("\(original)@example.org"))
            await #expect(throws: AccountServiceError.credentialsTaken, "\(alike)") {
                try await store.signup(Self.details("\(alike)@example.org"))
            }
            let anonymous = try await store.signInAnonymously()
            await #expect(throws: AccountServiceError.credentialsTaken) {
                try await store.upgrade(anonymous.accountId, with: Self.details("\(alike)@example.org"))
            }
            let other = try await store.signup(Self.details("other-\(original)@example.org"))
            var change = AccountDetails()
            change.userId = "\(alike)@example.org"
            await #expect(throws: AccountServiceError.credentialsTaken) {
                try await store.modify(other.accountId, try AccountModifications(modifiedDetails: change), context: .init())
            }
            // Once the holder is deleted, the look-alike is free.
            try await store.delete(taken.accountId)
            let alikeAccount = try await store.signup(Self.details("\(alike)@example.org"))
            // Free the skeleton for the next pair (several imitate the same letter).
            try await store.delete(alikeAccount.accountId)
            try await store.delete(other.accountId)
        }
        await store.close()
    }

    @Test("twelve look-alikes signed up at once: exactly one account")
    func concurrentLookAlikes() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        // Latin, Latin with an alpha, capitals, Cyrillic: one script each, all alike.
        let userIds = ["ace", "ɑce", "ACE", "асе", "АСЕ"].map { "\($0)@example.org" } + (0..<7).map { _ in "ace@example.org" }
        let created = await withTaskGroup(of: Bool.self) { group in
            for userId in userIds {
                group.addTask {
                    do {
                        _ = try await store.signup(Self.details(userId))
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(created == 1)
        await store.close()
    }

    @Test("an older log with look-alikes opens; its accounts sign in; a new look-alike of them is refused; user-ids names them")
    func olderLogKeepsWorking() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        try FileManager.default.createDirectory(at: fixture.directory, withIntermediateDirectories: true)
        // A log written by a version that claimed only user ids (no skeletons), with two look-alikes.
        var logOptions = EventLogOptions()
        logOptions.sync = .relaxed
        let log = try EventLog(path: fixture.directory.appendingPathComponent("log").path, options: logOptions)
        let accounts = AccountLog(log: log, vault: nil)
        let hash = try PasswordHasher(algorithm: .scrypt(.insecureTesting), allowingWeakParameters: true).hash("correct horse")
        for (id, userId) in [("old-1", "ace@example.org"), ("old-2", "асе@example.org")] {
            try await accounts.append(
                [.accountCreated(userId: userId, passwordHash: hash, isAnonymous: false, values: [:])], to: id, expectedVersion: .noStream,
                claims: [accounts.claim(forUserId: userId)])
        }
        await log.close()
        let store = try await fixture.open { $0.cryptoShredding = false }
        #expect(store.skeletonClaimsFrom == 2)
        #expect(try await store.login(userId: "ace@example.org", password: "correct horse").accountId == "old-1")
        #expect(try await store.login(userId: "асе@example.org", password: "correct horse").accountId == "old-2")
        // A look-alike in one script (Latin alpha), which the old accounts' skeletons match.
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(Self.details("ɑce@example.org")) }
        await #expect(throws: AccountOperationError.self) { try await store.signup(Self.details("aсe@example.org")) }
        let findings = try await store.userIdFindings()
        #expect(findings.contains { $0.kind == .lookAlike && $0.accountIds == ["old-1", "old-2"] })
        // Both gone: the look-alike is free.
        try await store.delete("old-1")
        try await store.delete("old-2")
        _ = try await store.signup(Self.details("ɑce@example.org"))
        await store.close()
    }
}
