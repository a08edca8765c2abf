//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Server-managed keys: .manual values are written by the server, never by clients")
struct ManagedKeysTests {
    @Test("modify refuses a .manual key; modifyManaged writes it, logged with its actor; credentials and required keys stay protected")
    func managedWrites() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let values: AccountValueConfiguration = [
            .requires(\.userId), .requires(\.password), .requires(\.name), .collects(\.dateOfBirth), .manual(\.biography)
        ]
        let store = try await fixture.open(values: values)
        var details = leland()
        details.name = PersonNameComponents(givenName: "Leland", familyName: "Stanford")
        let id = try await store.signup(details).accountId

        var biography = AccountDetails()
        biography.biography = "Cohort B (assigned by the study team)"
        let change = try AccountModifications(modifiedDetails: biography)
        await #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["biography"])) {
            _ = try await store.modify(id, change)
        }
        #expect(try store.details(of: id)?.biography == nil)

        let updated = try await store.modifyManaged(id, change, context: AccountStore.Context(actor: "study-admin"))
        #expect(updated.biography == "Cohort B (assigned by the study team)")
        #expect(try store.details(of: id)?.biography == "Cohort B (assigned by the study team)")
        let last = try #require(try await store.log.readStream(id).last)
        #expect(last.type == "account.details-modified" && last.metadata.actor == "study-admin")

        // The server path is not a way around the credentials' own checks or required keys.
        var password = AccountDetails()
        password.password = "a new password 123"
        await #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["password"])) {
            _ = try await store.modifyManaged(id, try AccountModifications(modifiedDetails: password))
        }
        var blankName = AccountDetails()
        blankName.name = PersonNameComponents(givenName: " ")
        await #expect(throws: AccountOperationError.missingAccountValue(["Name"])) {
            _ = try await store.modifyManaged(id, try AccountModifications(modifiedDetails: blankName))
        }
        await store.close()
    }
}
