//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Follow-up after a schema change: accounts missing a newly required key")
struct FollowUpTests {
    @Test("a key made required later: the store lists who lacks it, login's follow-up asks for it, supplying it ends the follow-up")
    func newlyRequired() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let before: AccountValueConfiguration = [.requires(\.userId), .requires(\.password), .requires(\.name), .collects(\.dateOfBirth)]
        var store = try await fixture.open(values: before)
        var ids: [String] = []
        for index in 0..<3 {
            var details = leland(userId: "follow-\(index)@example.org")
            details.name = PersonNameComponents(givenName: "Follow\(index)", familyName: "Up")
            details.dateOfBirth = index == 1 ? Date(timeIntervalSince1970: 0) : nil
            ids.append(try await store.signup(details).accountId)
        }
        #expect(try store.accountsMissingRequiredKeys().isEmpty)
        await store.close()

        // The new version of the app requires the date of birth.
        let after: AccountValueConfiguration = [.requires(\.userId), .requires(\.password), .requires(\.name), .requires(\.dateOfBirth)]
        store = try await fixture.open(values: after)
        let missing = try store.accountsMissingRequiredKeys()
        #expect(missing.map(\.accountId) == [ids[0], ids[2]].sorted())
        #expect(missing.allSatisfy { $0.missing == ["dateOfBirth"] })

        let signedIn = try await store.login(userId: "follow-0@example.org", password: "StanfordRocks123!")
        let followUp = try #require(try store.followUp(for: signedIn.accountId))
        #expect(followUp.isNeeded && followUp.identifiers == ["dateOfBirth"])
        #expect(throws: AccountOperationError.missingAccountValue([AccountKeys.key(\.dateOfBirth).name])) {
            _ = try followUp.modifications(AccountDetails())
        }
        var entered = AccountDetails()
        entered.dateOfBirth = Date(timeIntervalSince1970: 86_400)
        entered.genderIdentity = .female  // not asked for: left out of the modification
        let supplied = try followUp.modifications(entered)
        #expect(supplied.modifiedKeys.map { $0.identifier } == ["dateOfBirth"])
        _ = try await store.modify(signedIn.accountId, supplied)
        #expect(try store.followUp(for: signedIn.accountId)?.isNeeded == false)
        #expect(try store.accountsMissingRequiredKeys().map(\.accountId) == [ids[2]])
        #expect(try store.followUp(for: "no-such-account") == nil)
        await store.close()
    }
}
