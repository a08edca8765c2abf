//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import Testing

/// A service with identity providers in every section, declared out of section order.
private actor SectionedService: AccountService {
    nonisolated let configuration = AccountServiceConfiguration(supportedKeys: .arbitrary)

    @IdentityProvider(section: .singleSignOn) private var singleSignOn = AnonymousSignupSetup()
    @IdentityProvider private var plain = "a provider without a section"
    @IdentityProvider(section: .primary) private var primary = UserIdPasswordSetup()

    func logout() async throws {}
    func delete() async throws {}
    func updateAccountDetails(_ modifications: AccountModifications) async throws {}
}

@Suite("Behaviour as upstream SpeziAccount and the seeds describe it")
struct UpstreamBehaviourTests {
    @Test("signup while a non-anonymous account is signed in is refused; no event mixes two accounts")
    func signupWhileSignedIn() async throws {
        let standard = RecordingStandard()
        let harness = try await AccountHarness(standard: standard)
        try await harness.service.signup(signupDetails())
        let first = try #require(harness.account.details)
        await #expect(throws: AccountServiceError.internalError) {
            try await harness.service.signup(signupDetails(userId: "second@stanford.edu"))
        }
        #expect(harness.account.details?.accountId == first.accountId)
        #expect(await harness.service.accountCount == 1)
        let events = await standard.events
        #expect(events.map(describe) == ["associatedAccount(lelandstanford@stanford.edu)"])
        // after logging out, the second signup goes through
        try await harness.service.logout()
        try await harness.service.signup(signupDetails(userId: "second@stanford.edu"))
        #expect(harness.account.details?.userId == "second@stanford.edu")
    }

    @Test("an anonymous account is still upgraded by signup, keeping its account id")
    func anonymousUpgrade() async throws {
        let harness = try await AccountHarness(service: InMemoryAccountService(supportsAnonymousSignIn: true))
        try await harness.service.signInAnonymously()
        let anonymousId = try #require(harness.account.details?.accountId)
        try await harness.service.signup(signupDetails())
        #expect(harness.account.details?.accountId == anonymousId)
        #expect(harness.account.details?.isAnonymous == false)
    }

    @Test("InitialValue: an omitted required key takes its .default; an .empty placeholder counts as missing")
    func initialValues() async throws {
        let configuration: AccountValueConfiguration = [
            .requires(\.userId), .requires(\.password), .requires(\.genderIdentity), .requires(\.dateOfBirth)
        ]
        var details = signupDetails()
        details.genderIdentity = nil
        details.dateOfBirth = Date(timeIntervalSince1970: 0)  // the key's .empty placeholder
        let harness = try await AccountHarness(configuration: configuration)
        await #expect(throws: AccountOperationError.missingAccountValue(["Date of Birth"])) {
            try await harness.service.signup(details)
        }
        #expect(!harness.account.signedIn)

        details.dateOfBirth = Date(timeIntervalSince1970: 86_400 * 365)
        try await harness.service.signup(details)
        #expect(harness.account.details?.genderIdentity == .preferNotToState)

        let service = harness.service.configuration
        let filled = AccountValidation.applyingInitialValues(to: AccountDetails(), values: configuration, service: service)
        #expect(filled.genderIdentity == .preferNotToState)
        #expect(filled.dateOfBirth == nil)
        let missing = AccountValidation.missingRequiredKeys(filled, values: configuration, service: service).map { $0.identifier }
        #expect(missing == ["userId", "password", "dateOfBirth"])
        // a stored epoch date is a value; only signup validation treats the placeholder as missing
        var stored = filled
        stored.dateOfBirth = Date(timeIntervalSince1970: 0)
        let storedMissing = AccountValidation.missingRequiredKeys(stored, values: configuration, service: service).map { $0.identifier }
        #expect(storedMissing == ["userId", "password"])
        let signupMissing = AccountValidation.missingRequiredKeys(stored, values: configuration, service: service, placeholdersMissing: true)
        #expect(signupMissing.map { $0.identifier } == ["userId", "password", "dateOfBirth"])
    }

    @Test("delete() with nobody signed in returns without an event")
    func deleteWithoutAccount() async throws {
        let standard = RecordingStandard()
        let harness = try await AccountHarness(standard: standard)
        try await harness.service.delete()
        #expect(await standard.events.isEmpty)
        #expect(!harness.account.signedIn)
    }

    @Test("requestExternalStorage refuses non-mutable keys before anything is stored")
    func requestRefusesNonMutable() async throws {
        let provider = InMemoryAccountStorageProvider()
        let storage = ExternalAccountStorage(provider: provider)
        var details = AccountDetails()
        details.biography = "kept out"
        details.loginCount = 3
        await #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["loginCount"])) {
            try await storage.requestExternalStorage(of: details, for: "account")
        }
        #expect(await provider.record(for: "account") == nil)

        // the in-memory service refuses such a signup before it creates the account
        let configuration: AccountValueConfiguration = [.requires(\.userId), .requires(\.password), .manual(\.loginCount)]
        let harness = try await AccountHarness(configuration: configuration, provider: InMemoryAccountStorageProvider())
        var signup = signupDetails()
        signup.loginCount = 1
        await #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["loginCount"])) {
            try await harness.service.signup(signup)
        }
        #expect(await harness.service.accountCount == 0)
        #expect(!harness.account.signedIn)
    }

    @Test("identity providers without a section go to .default, between primary and single sign-on")
    func defaultSection() {
        let service = SectionedService()
        #expect(service.allSetupOptions.map(\.section) == [.singleSignOn, .default, .primary])
        #expect(service.setupOptions.map(\.section) == [.primary, .default, .singleSignOn])
        #expect(service.setupOptions.map(\.name) == ["primary", "plain", "singleSignOn"])
        #expect(AccountSetupSection.primary < .default && AccountSetupSection.default < .singleSignOn)
    }
}
