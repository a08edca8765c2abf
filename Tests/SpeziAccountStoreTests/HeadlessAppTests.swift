//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import SpeziAccountTesting
import Testing

@testable import SpeziAccountStore

/// The seed's UI-test flow, step by step with XCTSpeziAccount's names, on any user-id/password service.
private func seedFlow<Service: UserIdPasswordAccountService>(_ app: HeadlessAccountApp<Service>) async throws {
    // A form with entries asks before it closes.
    try await app.fillSignupForm(email: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
    #expect(throws: HeadlessAppError.unsavedChanges) { try app.closeSignupForm(discardChangesIfAsked: false) }
    try app.closeSignupForm(discardChangesIfAsked: true)
    #expect(app.signupForm == nil)
    await #expect(throws: HeadlessAppError.noSignupForm) { try await app.submitSignupForm() }

    try await app.fillSignupForm(
        email: "lelandstanford@stanford.edu", password: "StanfordRocks123!",
        name: PersonNameComponents(givenName: "Leland", familyName: "Stanford"), supplyDateOfBirth: true)
    await #expect(throws: HeadlessAppError.unexpectedGenderIdentity(found: nil)) {
        try await app.updateGenderIdentity(from: .female, to: .male)
    }
    try await app.updateGenderIdentity(from: .preferNotToState, to: .male)
    try await app.submitSignupForm()
    #expect(app.signupForm == nil)
    let created = try #require(app.account.details)
    #expect(created.userId == "lelandstanford@stanford.edu" && created.genderIdentity == .male)
    #expect(created.dateOfBirth == HeadlessAccountApp<Service>.pickedDateOfBirth)

    // On the account overview.
    try await app.updateGenderIdentity(from: .male, to: .preferNotToState)
    #expect(app.account.details?.genderIdentity == .preferNotToState)
    try await app.service.logout()
    await #expect(throws: HeadlessAppError.notSignedIn) { try await app.changeDateOfBirth() }
    try await app.login(email: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
    #expect(app.account.details?.name?.givenName == "Leland")
    try await app.service.logout()
    try await app.login(username: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
    #expect(app.account.details != nil)
}

@Suite("The seed's XCTSpeziAccount helpers, headless, on either service")
struct HeadlessAppTests {
    @Test("the in-memory service")
    func inMemory() async throws {
        let service = InMemoryAccountService()
        let configuration = AccountConfiguration(service: service, configuration: storeSeedConfiguration)
        let runtime = SpeziRuntime(configuration: Configuration { configuration })
        try await runtime.boot()
        try await seedFlow(HeadlessAccountApp(service: service, account: configuration.account))
    }

    @Test("the event-sourced service: the same steps, and the log holds them")
    func eventSourced() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open(values: storeSeedConfiguration)
        let harness = try await ServiceHarness(store: store)
        try await seedFlow(HeadlessAccountApp(service: harness.service, account: harness.account))
        let id = try #require(harness.account.details?.accountId)
        let types = try await store.log.readStream(id).map(\.type)
        #expect(
            types == [
                "account.created", "account.details-modified", "auth.logged-out", "auth.login-succeeded", "auth.logged-out", "auth.login-succeeded"
            ])
        await store.close()
    }
}
