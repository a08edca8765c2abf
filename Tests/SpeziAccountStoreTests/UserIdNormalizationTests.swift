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

/// Pairs of user ids that look alike and must be one account: the first as signed up, the second
/// as somebody else tries it.
private let lookAlikes: [(first: String, second: String)] = [
    ("élise@x.org", "e\u{301}lise@x.org"),  // NFC and NFD
    ("strasse@x.org", "straße@x.org"),  // ß folds to ss
    ("\u{130}nci@x.org", "i\u{307}nci@x.org"),  // İ folds to i + U+0307
    ("office@x.org", "o\u{FB03}ce@x.org"),  // the ﬃ ligature
    ("elise@x.org", "\u{FF25}\u{FF2C}\u{FF29}\u{FF33}\u{FF25}@\u{FF58}.\u{FF4F}\u{FF52}\u{FF47}"),  // fullwidth ＥＬＩＳＥ@ｘ.ｏｒｇ
    ("<img src=x>@b.org", "\u{FF1C}img src=x\u{FF1E}@b.org")  // fullwidth angle brackets
]

/// User ids the store refuses, with the rule that refuses them.
private let refused: [(userId: String, rule: UserIdNormalization.Refusal)] = [
    ("ada\u{0}@x.org", .controlCharacter),  // NUL
    ("a\u{200D}da@x.org", .invisibleCharacter),  // zero-width joiner
    ("ada\u{202E}gro.x@x.org", .invisibleCharacter),  // right-to-left override
    ("ada\u{E000}@x.org", .privateUse),
    ("ada\u{0378}@x.org", .unassigned),
    ("p\u{430}ypal@x.org", .mixedScript),  // Cyrillic а among Latin letters
    ("ada@\u{3BF}x.org", .mixedScript)  // Greek ο in a Latin domain
]

@Suite("User ids: one normalization profile, refusals, and stores written under the older rule")
struct UserIdNormalizationTests {
    @Test("an ASCII user id takes the fast path, and it gives what the rounds give: every ASCII character first, inside and last")
    func asciiFastPath() {
        for code in UInt8(0)..<0x80 {
            let character = String(UnicodeScalar(code))
            for userId in [character + "Ab@X.org", "Ab" + character + "x@X.org", "Ab@X.org" + character, character, " \t" + character + "\r\n"] {
                #expect(UserIdNormalization.asciiNormalized(userId) == UserIdNormalization.normalizedByRounds(userId), "\(Array(userId.utf8))")
                #expect(
                    UserIdNormalization.legacyNormalized(userId) == userId.trimmingCharacters(in: .whitespacesAndNewlines).lowercased(),
                    "\(Array(userId.utf8))")
                #expect(
                    UserIdNormalization.isLookupAcceptable(userId) == UserIdNormalization.isLookupAcceptableByProperties(userId),
                    "\(Array(userId.utf8))")
            }
        }
        #expect(UserIdNormalization.asciiNormalized("  \u{0B}\u{0C} ") == "")
        #expect(UserIdNormalization.asciiNormalized("  Jane.DOE@Example.ORG\n") == "jane.doe@example.org")
        // Anything else goes through the rounds.
        #expect(UserIdNormalization.asciiNormalized("J\u{E4}ne@x.org") == nil)
        #expect(UserIdNormalization.normalized("J\u{E4}ne@x.org") == "j\u{E4}ne@x.org")
    }

    @Test("the profile: NFKC, full case folding, NFKC, trimmed; stable; the older rule was trim + lowercased")
    func profile() {
        for (first, second) in lookAlikes {
            #expect(UserIdNormalization.normalized(first) == UserIdNormalization.normalized(second), "\(first)")
        }
        #expect(UserIdNormalization.normalized("  Straße@X.ORG\n") == "strasse@x.org")
        #expect(UserIdNormalization.normalized("\u{FB03}") == "ffi")
        #expect(UserIdNormalization.normalized("\u{130}") == "i\u{307}")
        #expect(UserIdNormalization.normalized("\u{3A3}\u{3C2}") == "\u{3C3}\u{3C3}")
        #expect(UserIdNormalization.legacyNormalized("  Straße@X.ORG\n") == "straße@x.org")
        for sample in lookAlikes.flatMap({ [$0.first, $0.second] }) + ["\u{1F88}@x", "\u{01C5}@x", "\u{FDFA}@x"] {
            let once = UserIdNormalization.normalized(sample)
            #expect(UserIdNormalization.normalized(once) == once, "\(sample)")
        }
        #expect(AccountLog.normalizedUserId("ÉLISE@X.ORG") == "élise@x.org")
        for (userId, rule) in refused {
            #expect(UserIdNormalization.refusal(of: userId) == rule, "\(userId.debugDescription)")
        }
        #expect(UserIdNormalization.refusal(of: "\u{3000} \n") == .empty)
        #expect(UserIdNormalization.refusal(of: "a\u{FE0F}@x.org") == .invisibleCharacter)
        #expect(UserIdNormalization.refusal(of: "a\u{2028}b@x.org") == .controlCharacter)
        // One script per part is fine: Cyrillic before the @, Latin after it; other scripts mix freely.
        for accepted in ["иван@x.org", "иван@пример.рф", "ελένη@x.gr", "日本太郎abc@example.jp", "  ada@x.org\n", "<img src=x>@b.org"] {
            #expect(UserIdNormalization.refusal(of: accepted) == nil, "\(accepted)")
        }
    }

    @Test("each look-alike of a user id is the same account: its signup is taken, its login reaches the first", arguments: lookAlikes.indices)
    func lookAlikesCollide(index: Int) async throws {
        let (first, second) = lookAlikes[index]
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let created = try await store.signup(leland(userId: first))
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: second)) }
        // The upgrade of an anonymous account and a change of user id are refused the same way.
        let anonymous = try await store.signInAnonymously()
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.upgrade(anonymous.accountId, with: leland(userId: second)) }
        let other = try await store.signup(leland(userId: "other-\(index)@example.org"))
        var change = AccountDetails()
        change.userId = second
        await #expect(throws: AccountServiceError.credentialsTaken) {
            try await store.modify(other.accountId, try AccountModifications(modifiedDetails: change))
        }
        #expect(try await store.login(userId: second, password: "StanfordRocks123!").accountId == created.accountId)
        await #expect(try store.accounts.accountId(forUserId: second) == created.accountId)
        await store.close()
    }

    @Test("refused user ids: invalid-value on signup, upgrade, change and signup request; logins and resets find nothing")
    func refusals() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let delivered = Mutex<[SignupConfirmationMessage]>([])
        let resets = Mutex(0)
        let store = try await fixture.open { options in
            options.signupConfirmationDelivery = { message in delivered.withLock { $0.append(message) } }
            options.passwordResetDelivery = { _ in resets.withLock { $0 += 1 } }
        }
        let anonymous = try await store.signInAnonymously()
        let account = try await store.signup(leland(userId: "ada@x.org"))
        let head = try await store.log.lastPosition()
        for (userId, rule) in refused {
            let expected = AccountOperationError.invalidValue(key: AccountDetails.__Key_userId.identifier, rule: rule.rawValue, message: rule.message)
            await #expect(throws: expected) { try await store.signup(leland(userId: userId)) }
            await #expect(throws: expected) { try await store.upgrade(anonymous.accountId, with: leland(userId: userId)) }
            await #expect(throws: expected) { try await store.requestSignup(leland(userId: userId)) }
            await #expect(throws: expected) { try await store.requestUpgrade(anonymous.accountId, with: leland(userId: userId)) }
            var change = AccountDetails()
            change.userId = userId
            await #expect(throws: expected) { try await store.modify(account.accountId, try AccountModifications(modifiedDetails: change)) }
            await #expect(throws: AccountServiceError.wrongCredentials) { try await store.login(userId: userId, password: "StanfordRocks123!") }
            try await store.requestPasswordReset(userId: userId)
            await #expect(try store.accounts.accountId(forUserId: userId) == nil)
        }
        // Nothing was written, delivered or sent.
        #expect(try await store.log.lastPosition() == head)
        #expect(delivered.withLock { $0.isEmpty } && resets.withLock { $0 } == 0)
        await store.close()
    }

    @Test("a log written under the older rule with colliding user ids opens; logins stay; verify names the accounts; import keeps them")
    func olderCollisions() async throws {
        let fixture = StoreFixture()
        let target = StoreFixture()
        defer {
            fixture.cleanup()
            target.cleanup()
        }
        let password = "StanfordRocks123!"
        var store = try await fixture.open()
        // What the older rule let in: claims of the user ids trimmed and lowercased.
        let older = [
            ("account-a", "élise@x.org"), ("account-b", "e\u{301}lise@x.org"), ("account-c", "Straße@x.org"), ("account-e", "p\u{430}ypal@x.org")
        ]
        for (accountId, userId) in older {
            let hash = try await store.hasher.hashOffPool(password)
            try await store.accounts.append(
                [.accountCreated(userId: userId, passwordHash: hash, isAnonymous: false, values: [:])], to: accountId,
                expectedVersion: .noStream, claims: [store.accounts.legacyClaim(forUserId: userId)])
        }
        #expect(store.accounts.legacyClaim(forUserId: "Straße@x.org") != store.accounts.claim(forUserId: "Straße@x.org"))
        // Signed up under the current rule: "strasse" is free, as account-c holds the claim of "straße".
        let d = try await store.signup(leland(userId: "strasse@x.org")).accountId
        await store.close()

        store = try await fixture.open()
        for (accountId, userId) in older {
            #expect(try await store.login(userId: userId, password: password).accountId == accountId, "\(userId)")
        }
        #expect(try await store.login(userId: "ÉLISE@X.ORG", password: password).accountId == "account-a")
        #expect(try await store.login(userId: "STRASSE@x.org", password: password).accountId == d)
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: "\u{FF45}\u{301}lise@x.org")) }
        await #expect(throws: AccountServiceError.credentialsTaken) { try await store.signup(leland(userId: "STRAßE@x.org")) }

        // Collisions first, in the order of their first account id; then refusals.
        let collisions = [
            UserIdFinding(kind: .collision, accountIds: ["account-a", "account-b"], normalizedClaimHolder: "account-a"),
            UserIdFinding(kind: .collision, accountIds: ["account-c", d].sorted(), normalizedClaimHolder: d)
        ]
        let expected =
            collisions.sorted { $0.accountIds.lexicographicallyPrecedes($1.accountIds) }
            + [UserIdFinding(kind: .refused(.mixedScript), accountIds: ["account-e"])]
        let findings = try await store.userIdFindings()
        #expect(findings == expected)
        for finding in findings {
            #expect(!finding.description.contains("@"), "\(finding)")
            #expect(finding.accountIds.allSatisfy { finding.description.contains($0) })
        }
        #expect(try await store.log.verify().isIntact)

        // Changing one of them to its own normalized spelling is refused; to a new one works and
        // releases the claim written under the older rule.
        var change = AccountDetails()
        change.userId = "ÉLISE@x.org"
        await #expect(throws: AccountServiceError.credentialsTaken) {
            try await store.modify("account-b", try AccountModifications(modifiedDetails: change))
        }
        change.userId = "elise.b@x.org"
        try await store.modify("account-b", try AccountModifications(modifiedDetails: change))
        await #expect(try store.log.claimOwner(store.accounts.legacyClaim(forUserId: "e\u{301}lise@x.org")) == nil)
        #expect(try await store.userIdFindings().count == 2)

        // An import takes the normalized claim for the first account of a group, the older claim
        // for the others: account-c now holds "strasse", so account d has no claim left.
        let exportURL = fixture.directory.appendingPathComponent("export.jsonl")
        try await writeExport(of: store.log, to: exportURL)
        let position = try #require(try await store.log.readStream(d, from: 1, limit: 1).first?.position)
        await store.close()
        let vault = fixture.directory.appendingPathComponent("keys/vault")
        await #expect(throws: LogTransferError.userIdCollision(position: position, account: d, holder: "account-c")) {
            _ = try await LogTransfer.importLog(from: exportURL, into: target.directory.path, vault: vault)
        }
        #expect(!FileManager.default.fileExists(atPath: target.directory.path))
    }

    @Test("an import of colliding accounts written under the older rule keeps each one's login")
    func importKeepsOlderLogins() async throws {
        let fixture = StoreFixture()
        let target = StoreFixture()
        defer {
            fixture.cleanup()
            target.cleanup()
        }
        let password = "StanfordRocks123!"
        let store = try await fixture.open()
        let older = [("account-a", "élise@x.org"), ("account-b", "E\u{301}LISE@x.org"), ("account-c", "Straße@x.org")]
        for (accountId, userId) in older {
            let hash = try await store.hasher.hashOffPool(password)
            try await store.accounts.append(
                [.accountCreated(userId: userId, passwordHash: hash, isAnonymous: false, values: [:])], to: accountId,
                expectedVersion: .noStream, claims: [store.accounts.legacyClaim(forUserId: userId)])
        }
        let exportURL = fixture.directory.appendingPathComponent("export.jsonl")
        try await writeExport(of: store.log, to: exportURL)
        await store.close()

        let vault = fixture.directory.appendingPathComponent("keys/vault")
        #expect(try await LogTransfer.importLog(from: exportURL, into: target.directory.path, vault: vault) == 3)
        let copy = try await target.open()
        for (accountId, userId) in older {
            #expect(try await copy.login(userId: userId, password: password).accountId == accountId, "\(userId)")
        }
        // account-c holds the normalized claim in the copy: any spelling reaches it.
        #expect(try await copy.login(userId: "STRASSE@x.org", password: password).accountId == "account-c")
        let collision = UserIdFinding(kind: .collision, accountIds: ["account-a", "account-b"], normalizedClaimHolder: "account-a")
        #expect(try await copy.userIdFindings() == [collision])
        await copy.close()
    }
}
