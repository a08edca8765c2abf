//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("The notification feed carries each account's state from record to record")
struct NotificationFeedTests {
    @Test("the feed, folds of any size and the per-record derivation report the same notifications for an interleaved history")
    func sameAsFoldingEachPrefix() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        var ids: [String] = []
        for index in 0..<3 {
            ids.append(try await store.signup(leland(userId: "feed\(index)@example.org", password: "password number \(index)")).accountId)
        }
        // A fixed interleaving: the account deleted at the end (ids[1]) gets every third change, and a
        // deleted account's sealed changes can no longer be read, so the others' 40 set the lower bound.
        for step in 0..<60 {
            let accountId = ids[(step + step / 4) % ids.count]
            var change = AccountDetails()
            change.name = PersonNameComponents(givenName: "Step \(step)", familyName: "Stanford")
            if step.isMultiple(of: 7) { change.genderIdentity = step.isMultiple(of: 2) ? .female : .male }
            _ = try await store.modify(accountId, try AccountModifications(modifiedDetails: change))
            if step.isMultiple(of: 11) {
                try await store.logout(accountId)
                _ = try await store.login(
                    userId: "feed\(ids.firstIndex(of: accountId)!)@example.org", password: "password number \(ids.firstIndex(of: accountId)!)")
            }
        }
        try await store.delete(ids[1])
        let records = try await store.log.read(from: 1, limit: 10_000)
        #expect(records.count > 60)

        var oneByOne: [LoggedNotification] = []
        for record in records { oneByOne += try await store.notifications(for: record) }
        #expect(oneByOne.count >= 40)
        for limit in [1, 2, 4_096] {
            var folds = NotificationFolds(limit: limit)
            var carried: [LoggedNotification] = []
            for record in records { carried += try await store.notifications(for: record, folds: &folds) }
            #expect(carried == oneByOne, "folds of at most \(limit) accounts")
        }
        var fed: [LoggedNotification] = []
        for try await notification in try await store.notifications(after: 0) {
            fed.append(notification)
            if fed.count == oneByOne.count { break }
        }
        #expect(fed == oneByOne)
        await store.close()
    }
}
