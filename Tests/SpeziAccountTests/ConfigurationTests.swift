//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import Testing

@Suite("Configuration and validation")
struct ConfigurationTests {
    @Test("value configuration: requirements, default and option checks")
    func valueConfiguration() throws {
        let configuration = seedConfiguration
        #expect(configuration.keys.map { $0.identifier } == ["userId", "password", "name", "dateOfBirth", "genderIdentity"])
        #expect(configuration.requirement(for: AccountKeys.key(\.name)) == .required)
        #expect(configuration.requirement(for: AccountKeys.key(\.genderIdentity)) == .collected)
        #expect(configuration.requirement(for: AccountKeys.key(\.email)) == nil)
        #expect(AccountValueConfiguration.default.keys.map { $0.identifier } == configuration.keys.map { $0.identifier })
        let mixed: AccountValueConfiguration = [.supports(\.biography), .manual(\.tags)]
        #expect(mixed.requirement(for: AccountKeys.key(\.biography)) == .supported)
        #expect(mixed.requirement(for: AccountKeys.key(\.tags)) == .manual)
        try configuration.validate()
        try mixed.validate()

        let invalid: AccountValueConfiguration = [.requires(\.loginCount), .supports(\.tags), .collects(\.accountId)]
        #expect(throws: AccountConfigurationError.invalidRequirement(keys: ["loginCount", "tags", "accountId"])) { try invalid.validate() }
        let duplicate: AccountValueConfiguration = [.requires(\.name), .collects(\.name)]
        #expect(throws: AccountConfigurationError.duplicateKey("name")) { try duplicate.validate() }
    }

    @Test("service configuration builder and default validation rules")
    func serviceConfiguration() {
        let emailService = AccountServiceConfiguration(supportedKeys: .arbitrary) {
            UserIdConfiguration.emailAddress
            RequiredAccountKeys {
                \.userId
                \.password
            }
        }
        #expect(emailService.userIdConfiguration.idType == .emailAddress)
        #expect(emailService.requiredAccountKeys.map { $0.identifier } == ["userId", "password"])
        #expect(emailService.fieldValidationRules(for: AccountKeys.key(\.userId)) == [.nonEmpty, .minimalEmail])
        #expect(emailService.fieldValidationRules(for: AccountKeys.key(\.email)) == [.nonEmpty, .minimalEmail])
        #expect(emailService.fieldValidationRules(for: AccountKeys.key(\.password)) == [.nonEmpty, .minimalPassword])
        #expect(emailService.fieldValidationRules(for: AccountKeys.key(\.biography)).isEmpty)
        #expect(emailService.supportedKeys.canStore(AccountKeys.key(\.biography)))

        let usernameService = AccountServiceConfiguration(supportedKeys: .exactly([AccountKeys.key(\.accountId), AccountKeys.key(\.userId)])) {
            UserIdConfiguration.username
            FieldValidationRules(for: \.password, rules: .nonEmpty, .strongPassword)
        }
        #expect(usernameService.userIdConfiguration.idType == .username)
        #expect(usernameService.fieldValidationRules(for: AccountKeys.key(\.userId)) == [.nonEmpty])
        #expect(usernameService.fieldValidationRules(for: AccountKeys.key(\.password)) == [.nonEmpty, .strongPassword])
        #expect(!usernameService.supportedKeys.canStore(AccountKeys.key(\.name)))
    }

    @Test("validation rules check whole strings")
    func rules() {
        #expect(!ValidationRule.nonEmpty.validate("   "))
        #expect(ValidationRule.nonEmpty.validate(" a "))
        #expect(ValidationRule.minimalEmail.validate("a@b"))
        #expect(!ValidationRule.minimalEmail.validate("@b"))
        #expect(!ValidationRule.minimalEmail.validate("a@"))
        #expect(!ValidationRule.minimalEmail.validate("ab"))
        #expect(ValidationRule.minimalPassword.validate("12345678"))
        #expect(!ValidationRule.minimalPassword.validate("1234567"))
        #expect(ValidationRule.mediumPassword.validate("1234567890"))
        #expect(!ValidationRule.mediumPassword.validate("123456789"))
        #expect(ValidationRule.strongPassword.validate("123456789012"))
        #expect(!ValidationRule.strongPassword.validate("12345678901"))
    }

    @Test("signup validation names every missing required key and applies rules")
    func signupValidation() throws {
        let service = InMemoryAccountService().configuration
        var details = AccountDetails()
        details.userId = "  "
        #expect(throws: AccountOperationError.missingAccountValue(["User Id", "Password", "Name"])) {
            try AccountValidation.validateSignup(details, values: seedConfiguration, service: service)
        }
        details = signupDetails(userId: "not-an-email")
        #expect(throws: AccountOperationError.invalidValue(key: "userId", rule: "minimalEmail", message: ValidationRule.minimalEmail.message)) {
            try AccountValidation.validateSignup(details, values: seedConfiguration, service: service)
        }
        details = signupDetails(password: "short")
        #expect(throws: AccountOperationError.invalidValue(key: "password", rule: "minimalPassword", message: ValidationRule.minimalPassword.message))
        {
            try AccountValidation.validateSignup(details, values: seedConfiguration, service: service)
        }
        try AccountValidation.validateSignup(signupDetails(), values: seedConfiguration, service: service)
        // A required name whose parts are all blank is no name.
        details = signupDetails()
        details.name = PersonNameComponents(givenName: "", familyName: "  ")
        #expect(throws: AccountOperationError.missingAccountValue(["Name"])) {
            try AccountValidation.validateSignup(details, values: seedConfiguration, service: service)
        }
        details.name = PersonNameComponents(nickname: "Lee")
        try AccountValidation.validateSignup(details, values: seedConfiguration, service: service)
        #expect(AccountValidation.isEmptyValue([String]()) && AccountValidation.isEmptyValue(Data()) && !AccountValidation.isEmptyValue(0))
    }

    @Test("modifications refuse accountId, non-mutable keys and removing required keys")
    func modifications() throws {
        var withId = AccountDetails()
        withId.accountId = "x"
        #expect(throws: AccountOperationError.accountIdChanged) { try AccountModifications(modifiedDetails: withId) }
        #expect(throws: AccountOperationError.accountIdChanged) {
            try AccountModifications(modifiedDetails: AccountDetails(), removedAccountDetails: withId)
        }

        let service = InMemoryAccountService().configuration
        let values = seedConfiguration + [.manual(\.biography), .supports(\.loginCount)]
        var counted = AccountDetails()
        counted.loginCount = 4
        #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["loginCount"])) {
            try AccountValidation.validateModifications(AccountModifications(modifiedDetails: counted), values: values, service: service)
        }
        var bio = AccountDetails()
        bio.biography = "x"
        #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["bio"])) {
            try AccountValidation.validateModifications(AccountModifications(modifiedDetails: bio), values: values, service: service)
        }
        var removed = signupDetails()
        removed.genderIdentity = nil
        removed.dateOfBirth = nil
        #expect(throws: AccountOperationError.removingRequiredAccountKeys(["name", "password", "userId"])) {
            try AccountValidation.validateModifications(
                AccountModifications(modifiedDetails: AccountDetails(), removedAccountDetails: removed), values: values, service: service)
        }
        // A required value may change, but not to an empty one.
        var blankName = AccountDetails()
        blankName.name = PersonNameComponents(givenName: "")
        #expect(throws: AccountOperationError.missingAccountValue(["Name"])) {
            try AccountValidation.validateModifications(AccountModifications(modifiedDetails: blankName), values: values, service: service)
        }
        var name = AccountDetails()
        name.name = PersonNameComponents(givenName: "Jane")
        let modification = try AccountModifications(
            modifiedDetails: name, removedAccountDetails: signupDetails().filtered(to: [AccountKeys.key(\.genderIdentity)]))
        try AccountValidation.validateModifications(modification, values: values, service: service)
        let applied = modification.applied(to: signupDetails())
        #expect(applied.name?.givenName == "Jane")
        #expect(applied.genderIdentity == nil)
    }
}
