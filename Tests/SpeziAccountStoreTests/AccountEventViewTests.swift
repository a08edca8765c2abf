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

@Suite("Account event views: a store's log read in place")
struct AccountEventViewTests {
    /// Signs three accounts up, changes two and deletes the third; returns the accounts' ids.
    static func history(on store: AccountStore) async throws -> (kept: String, renamed: String, deleted: String) {
        let kept = try await store.signup(leland(userId: "kept@stanford.edu")).accountId
        let renamed = try await store.signup(leland(userId: "renamed@stanford.edu")).accountId
        let deleted = try await store.signup(leland(userId: "deleted@stanford.edu")).accountId
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Jane", familyName: "Stanford")
        var removed = AccountDetails()
        removed.genderIdentity = .male
        _ = try await store.modify(kept, try AccountModifications(modifiedDetails: change, removedAccountDetails: removed))
        var newUserId = AccountDetails()
        newUserId.userId = "jane@stanford.edu"
        _ = try await store.modify(renamed, try AccountModifications(modifiedDetails: newUserId))
        await #expect(throws: AccountServiceError.wrongCredentials) { try await store.login(userId: "kept@stanford.edu", password: "wrong") }
        _ = try await store.modify(deleted, try AccountModifications(modifiedDetails: change))
        try await store.delete(deleted)
        return (kept, renamed, deleted)
    }

    @Test("with crypto-shredding: every record's view gives the decoded event; a deleted account's personal events are redacted")
    func sealedStore() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let ids = try await Self.history(on: store)
        let records = try await store.log.read(from: 1, limit: 1_000)
        var kinds: [AccountEvent.Kind] = []
        var redacted = 0
        for record in records {
            let expected = try store.accounts.event(from: record)
            let viewed = try AccountEventView.read(record, vault: store.accounts.vault) { view in
                kinds.append(view.kind)
                #expect(view.kind.name == record.type)
                if view.isRedacted {
                    redacted += 1
                    #expect(record.streamID == ids.deleted && view.values.isEmpty && view.userId == nil)
                }
                return try view.event()
            }
            #expect(viewed == expected)
            if case let .accountCreated(userId, _, _, values) = expected {
                try AccountEventView.read(record, vault: store.accounts.vault) { view in
                    #expect(view.userId == userId && view.values.dictionary() == values && view.values.count == values.count)
                }
            }
        }
        // Signup, name change and (empty) upcast-free deletion of the deleted account: two sealed events.
        #expect(redacted == 2)
        #expect(Set(kinds).isSuperset(of: [.accountCreated, .detailsModified, .userIdChanged, .loginFailed, .accountDeleted]))
        await store.close()
    }

    @Test("without crypto-shredding: payloads read in place, values and removed identifiers as written")
    func plainStore() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.cryptoShredding = false }
        let ids = try await Self.history(on: store)
        let records = try await store.log.readStream(ids.kept)
        let modified = try #require(records.first { $0.type == "account.details-modified" })
        try AccountEventView.read(modified) { view in
            #expect(view.kind == .detailsModified && !view.isRedacted)
            #expect(view.values.identifiers == ["name"])
            #expect(view.removedIdentifiers == ["genderIdentity"])
            let name = try #require(view.values["name"])
            #expect(String(decoding: name, as: UTF8.self).contains("Jane"))
        }
        let renamed = try await store.log.readStream(ids.renamed)
        let change = try #require(renamed.first { $0.type == "account.userid-changed" })
        #expect(try AccountEventView.read(change) { $0.userId } == "jane@stanford.edu")
        // A type this version does not know is refused with its name.
        let unknown = RecordedEvent(
            position: 1, streamID: "s", streamVersion: 1, eventID: UUID(), type: "account.from-the-future", schemaVersion: 1,
            timestamp: Date(), metadata: EventMetadata(), payload: Data([1]), hash: ChainHash.genesis)
        #expect(throws: PayloadDecodingError.unknownEventType("account.from-the-future")) {
            try AccountEventView.read(unknown) { _ in }
        }
        await store.close()
    }
}
