//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

/// The event-sourced service where upstream's services decide: one account per session, and a
/// deletion with nobody signed in.
@Suite("EventSourcedAccountService behaves as upstream's services")
struct ServiceUpstreamTests {
    @Test("a signup while a full account is signed in is refused and appends nothing; an anonymous one is upgraded")
    func signupWhileSignedIn() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let harness = try await ServiceHarness(store: store)
        try await harness.service.signup(leland())
        let signedIn = try #require(harness.account.details?.accountId)
        let head = try await store.log.lastPosition()
        await #expect(throws: AccountServiceError.internalError) { try await harness.service.signup(leland(userId: "jane@stanford.edu")) }
        #expect(try await store.log.lastPosition() == head)
        #expect(harness.account.details?.accountId == signedIn)

        await harness.account.removeUserDetails()
        try await harness.service.signInAnonymously()
        let anonymous = try #require(harness.account.details?.accountId)
        try await harness.service.signup(leland(userId: "jane@stanford.edu"))
        #expect(harness.account.details?.accountId == anonymous && harness.account.details?.isAnonymous == false)
        await harness.runtime.shutdown()
    }

    @Test("delete() with nobody signed in returns and appends nothing")
    func deleteSignedOut() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let harness = try await ServiceHarness(store: store)
        try await harness.service.delete()
        #expect(try await store.log.lastPosition() == 0)
        await harness.runtime.shutdown()
    }
}
