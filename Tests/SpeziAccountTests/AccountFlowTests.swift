//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import Testing

@Suite("In-memory account flows")
struct AccountFlowTests {
    @Test("the seed's flow: sign up, modify, log out, log in, delete, with notifications in order")
    func seedFlow() async throws {
        let log = EventLog()
        let standard = RecordingStandard(log: log)
        let harness = try await AccountHarness(standard: standard)
        let account = harness.account
        let service = harness.service
        let events = harness.notifications.events

        #expect(!account.signedIn)
        try await service.signup(signupDetails())
        #expect(account.signedIn)
        let details = try #require(account.details)
        #expect(details.userId == "lelandstanford@stanford.edu")
        #expect(details.password == nil)
        #expect(details.isNewUser)
        #expect(details.name?.givenName == "Leland")
        #expect(details.genderIdentity == .male)
        #expect(details.email == "lelandstanford@stanford.edu")
        let accountId = details.accountId

        var newName = AccountDetails()
        newName.name = PersonNameComponents(givenName: "Jane", familyName: "Stanford")
        try await service.updateAccountDetails(AccountModifications(modifiedDetails: newName))
        #expect(account.details?.name?.givenName == "Jane")
        #expect(account.details?.isNewUser == false)

        try await service.logout()
        #expect(!account.signedIn)

        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await service.login(userId: "lelandstanford@stanford.edu", password: "wrong-password")
        }
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await service.login(userId: "nobody@stanford.edu", password: "StanfordRocks123!")
        }
        try await service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        #expect(account.details?.accountId == accountId)
        #expect(account.details?.name?.givenName == "Jane")
        #expect(account.details?.isNewUser == false)

        try await service.delete()
        #expect(!account.signedIn)
        #expect(await service.accountCount == 0)
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        }

        let received = try await next(6, of: events)
        let user = "lelandstanford@stanford.edu"
        #expect(
            received.map(describe) == [
                "associatedAccount(\(user))",
                "detailsChanged(\(user))",
                "disassociatingAccount(\(user))",
                "associatedAccount(\(user))",
                "deletingAccount(\(accountId))",
                "disassociatingAccount(\(user))"
            ])
        if case let .detailsChanged(old, new) = received[1] {
            #expect(old.name?.givenName == "Leland")
            #expect(new.name?.givenName == "Jane")
        } else {
            Issue.record("expected detailsChanged")
        }
        // the standard heard the same events, first
        #expect(await standard.events == received)
    }

    @Test("signup errors: taken credentials, missing required values, invalid values")
    func signupErrors() async throws {
        let harness = try await AccountHarness()
        try await harness.service.signup(signupDetails())
        try await harness.service.logout()
        await #expect(throws: AccountServiceError.credentialsTaken) {
            try await harness.service.signup(signupDetails(password: "AnotherPassword1"))
        }
        var missingName = signupDetails(userId: "jane@stanford.edu")
        missingName.name = nil
        await #expect(throws: AccountOperationError.missingAccountValue(["Name"])) {
            try await harness.service.signup(missingName)
        }
        await #expect(
            throws: AccountOperationError.invalidValue(key: "password", rule: "minimalPassword", message: ValidationRule.minimalPassword.message)
        ) {
            try await harness.service.signup(signupDetails(userId: "jane@stanford.edu", password: "short"))
        }
        #expect(!harness.account.signedIn)
        // password reset is accepted and does nothing
        try await harness.service.resetPassword(userId: "lelandstanford@stanford.edu")
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
    }

    @Test("server-side validation rules configured on the service are enforced")
    func strongPasswords() async throws {
        let service = InMemoryAccountService(validationRules: [FieldValidationRules(for: \.password, rules: .nonEmpty, .strongPassword)])
        let harness = try await AccountHarness(service: service)
        await #expect(
            throws: AccountOperationError.invalidValue(key: "password", rule: "strongPassword", message: ValidationRule.strongPassword.message)
        ) {
            try await service.signup(signupDetails(password: "Eleven11111"))
        }
        try await service.signup(signupDetails(password: "Twelve121212"))
        var weak = AccountDetails()
        weak.password = "Eleven11111"
        await #expect(throws: AccountOperationError.self) {
            try await service.updateAccountDetails(AccountModifications(modifiedDetails: weak))
        }
        #expect(harness.account.signedIn)
    }

    @Test("anonymous sign-in and upgrade keep the accountId")
    func anonymous() async throws {
        let harness = try await AccountHarness(service: InMemoryAccountService(supportsAnonymousSignIn: true))
        let events = harness.notifications.events
        try await harness.service.signInAnonymously()
        let anonymous = try #require(harness.account.details)
        #expect(anonymous.isAnonymous)
        #expect(anonymous.isNewUser)
        try await harness.service.signup(signupDetails())
        let upgraded = try #require(harness.account.details)
        #expect(upgraded.accountId == anonymous.accountId)
        #expect(!upgraded.isAnonymous)
        #expect(upgraded.userId == "lelandstanford@stanford.edu")
        #expect(await harness.service.accountCount == 1)
        let received = try await next(2, of: events)
        guard case .associatedAccount = received[0], case let .detailsChanged(old, new) = received[1] else {
            Issue.record("unexpected events \(received)")
            return
        }
        #expect(old.isAnonymous && !new.isAnonymous)
    }

    @Test("step-up re-authentication guards delete and credential changes")
    func stepUp() async throws {
        let requests = EventLog()
        let allow = SpeziLockFlag()
        let security = SecurityRelatedAuthenticationHandler { operation in
            requests.append(operation.rawValue)
            guard allow.value else {
                throw AccountServiceError.cancelled
            }
        }
        let harness = try await AccountHarness(service: InMemoryAccountService(security: security))
        let service = harness.service
        try await service.signup(signupDetails())
        let events = harness.notifications.events

        await #expect(throws: AccountServiceError.cancelled) { try await service.delete() }
        #expect(harness.account.signedIn)
        var password = AccountDetails()
        password.password = "NewPassword123"
        await #expect(throws: AccountServiceError.cancelled) {
            try await service.updateAccountDetails(AccountModifications(modifiedDetails: password))
        }
        var name = AccountDetails()
        name.name = PersonNameComponents(givenName: "Jane")
        try await service.updateAccountDetails(AccountModifications(modifiedDetails: name))
        #expect(requests.all == ["deleteAccount", "changePassword"])

        allow.value = true
        var userId = AccountDetails()
        userId.userId = "jane@stanford.edu"
        try await service.updateAccountDetails(AccountModifications(modifiedDetails: userId))
        try await service.updateAccountDetails(AccountModifications(modifiedDetails: password))
        #expect(requests.all == ["deleteAccount", "changePassword", "changeUserId", "changePassword"])
        try await service.logout()
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await service.login(userId: "lelandstanford@stanford.edu", password: "NewPassword123")
        }
        try await service.login(userId: "jane@stanford.edu", password: "NewPassword123")
        #expect(harness.account.details?.password == nil)

        // the refused operations produced no events; the name change did
        let received = try await next(4, of: events)
        #expect(
            received.map(describe) == [
                "detailsChanged(lelandstanford@stanford.edu)",
                "detailsChanged(jane@stanford.edu)",
                "detailsChanged(jane@stanford.edu)",
                "disassociatingAccount(jane@stanford.edu)"
            ])
    }

    @Test("supplyUserDetails needs an accountId and strips the password; updates need a signed-in account")
    func accountModule() async throws {
        let harness = try await AccountHarness()
        var details = AccountDetails()
        details.password = "secret"
        await #expect(throws: AccountOperationError.missingAccountValue(["Account Id"])) {
            try await harness.account.supplyUserDetails(details)
        }
        details.accountId = "acc-1"
        try await harness.account.supplyUserDetails(details)
        #expect(harness.account.details?.password == nil)
        #expect(harness.account.details?.userIdType == .emailAddress)
        let configuration = harness.account.details?[AccountDetails.AccountServiceConfigurationDetailsKey.self]
        #expect(configuration?.userIdConfiguration == harness.service.configuration.userIdConfiguration)
        await harness.account.removeUserDetails()
        await #expect(throws: AccountServiceError.notSignedIn) {
            try await harness.service.updateAccountDetails(AccountModifications(modifiedDetails: AccountDetails()))
        }
        // as upstream: delete() with nobody signed in returns
        try await harness.service.delete()
    }

    @Test("headless setup options, signup form and overview")
    func headless() async throws {
        let plain = InMemoryAccountService()
        #expect(plain.setupOptions.map(\.name) == ["userIdPassword"])
        let withAnonymous = InMemoryAccountService(supportsAnonymousSignIn: true)
        #expect(withAnonymous.setupOptions.map(\.section) == [.primary, .singleSignOn])
        #expect(withAnonymous.setupOptions.map(\.description) == ["userId and password", "anonymous sign-in"])

        let form = SignupFormDescription(values: seedConfiguration, service: plain.configuration)
        #expect(form.sections.map(\.category) == [.credentials, .name, .personalDetails])
        #expect(form.identifiers == ["userId", "password", "name", "dateOfBirth", "genderIdentity"])
        #expect(form.sections[0].fields[1].rules == [.nonEmpty, .minimalPassword])
        #expect(form.sections[2].fields.map(\.requirement) == [.collected, .collected])

        var details = signupDetails()
        details.accountId = "acc-1"
        details.loginCount = 3
        let overview = AccountOverviewDescription(details: details, values: seedConfiguration + [.manual(\.biography)])
        let rows = overview.sections.flatMap(\.rows)
        #expect(!rows.contains { $0.key.identifier == "password" })
        #expect(rows.first { $0.key.identifier == "loginCount" }?.isEditable == false)
        #expect(rows.first { $0.key.identifier == "name" }?.isEditable == true)
        #expect(rows.first { $0.key.identifier == "accountId" }?.isEditable == false)
    }
}

/// A thread-safe Bool for test hooks.
final class SpeziLockFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = false

    var value: Bool {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }
}

func + (lhs: AccountValueConfiguration, rhs: [ConfiguredAccountKey]) -> AccountValueConfiguration {
    AccountValueConfiguration(lhs.configured + rhs)
}
