//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

@Suite("Account keys")
struct AccountKeyTests {
    @Test("built-in keys have stable identifiers, names and categories")
    func builtIns() {
        #expect(
            AccountDetails.builtInKeys.map { $0.identifier } == ["accountId", "userId", "password", "name", "dateOfBirth", "genderIdentity", "email"])
        #expect(AccountKeys.key(\.accountId).category == .credentials)
        #expect(AccountKeys.key(\.userId).category == .credentials)
        #expect(AccountKeys.key(\.password).category == .credentials)
        #expect(AccountKeys.key(\.name).category == .name)
        #expect(AccountKeys.key(\.dateOfBirth).category == .personalDetails)
        #expect(AccountKeys.key(\.genderIdentity).category == .personalDetails)
        #expect(AccountKeys.key(\.email).category == .contactDetails)
        #expect(AccountKeys.key(\.accountId).isRequired)
        #expect(AccountKeys.key(\.userId).isRequired)
        #expect(!AccountKeys.key(\.password).isRequired)
        #expect(AccountKeys.key(\.accountId).options == .display)
        #expect(AccountKeys.key(\.genderIdentity).initialValue == .default(.preferNotToState))
        #expect(GenderIdentity.allCases == [.female, .male, .transgender, .nonBinary, .preferNotToState])
    }

    @Test("macro-shaped keys get defaults for options and initial values")
    func defaults() {
        #expect(AccountKeys.key(\.biography).identifier == "bio")
        #expect(AccountKeys.key(\.biography).initialValue == .empty(""))
        #expect(AccountKeys.key(\.newsletter).options == [.display, .mutable])
        #expect(AccountKeys.key(\.newsletter).initialValue == .default(false))
        #expect(AccountKeys.key(\.loginCount).initialValue == .empty(0))
        #expect(AccountKeys.key(\.tags).initialValue == .empty([]))
        #expect(AccountKeys.key(\.newsletter).category == .custom("Preferences"))
        #expect(AccountKeys.key(\.newsletter).category.title == "Preferences")
        #expect(AccountKeyOptions.default == [.display, .mutable])
    }

    @Test("the registry looks keys up by identifier")
    func registry() {
        var registry = AccountKeyRegistry.builtIn
        #expect(registry.key(for: "name") == AccountDetails.__Key_name.self)
        #expect(registry.key(for: "bio") == nil)
        registry.register(AccountDetails.__Key_biography.self)
        #expect(registry.key(for: "bio") == AccountDetails.__Key_biography.self)
        #expect(registry.keys.count == 8)
    }
}

@Suite("Account details")
struct AccountDetailsTests {
    @Test("typed subscripts set, read and remove values")
    func subscripts() {
        var details = AccountDetails()
        #expect(details.isEmpty)
        details.biography = "Hello"
        details[AccountDetails.__Key_loginCount.self] = 3
        #expect(details.biography == "Hello")
        #expect(details.loginCount == 3)
        #expect(details.contains(AccountKeys.key(\.biography)))
        #expect(details.keys.map { $0.identifier } == ["bio", "loginCount"])
        details.biography = nil
        #expect(!details.contains(AccountKeys.key(\.biography)))
        details.remove(AccountKeys.key(\.loginCount))
        #expect(details.isEmpty)
    }

    @Test("userId falls back to accountId; email falls back to userId only for email user ids")
    func fallbacks() {
        var details = AccountDetails()
        details.accountId = "acc-1"
        #expect(details.userId == "acc-1")
        details.userId = "leland@stanford.edu"
        #expect(details.email == nil)
        details.userIdType = .emailAddress
        #expect(details.email == "leland@stanford.edu")
        details.userIdType = .username
        #expect(details.email == nil)
        details.email = "other@stanford.edu"
        #expect(details.email == "other@stanford.edu")
    }

    @Test("AccountServiceConfigurationDetailsKey holds the service's configuration, whose user id type decides the email fallback")
    func serviceConfigurationKey() throws {
        typealias ConfigurationKey = AccountDetails.AccountServiceConfigurationDetailsKey
        var details = AccountDetails()
        details.userId = "ada@example.org"
        #expect(details[ConfigurationKey.self] == nil)
        #expect(details.email == nil)
        #expect(details.accountServiceConfiguration.userIdConfiguration == ConfigurationKey.defaultValue.userIdConfiguration)

        details[ConfigurationKey.self] = AccountServiceConfiguration(supportedKeys: .arbitrary) {
            UserIdConfiguration.emailAddress
        }
        #expect(details.userIdType == .emailAddress)
        #expect(details.email == "ada@example.org")
        #expect(details[ConfigurationKey.self]?.userIdConfiguration == .emailAddress)

        details.accountServiceConfiguration = AccountServiceConfiguration(supportedKeys: .arbitrary) {
            UserIdConfiguration.username
        }
        #expect(details.userIdType == .username)
        #expect(details.email == nil)

        // not a value: neither compared nor encoded, but carried over by merging
        var plain = AccountDetails()
        plain.userId = "ada@example.org"
        #expect(details == plain)
        #expect(try JSONEncoder().encode(details) == JSONEncoder().encode(plain))
        let merged = plain.merging(details)
        #expect(merged[ConfigurationKey.self]?.userIdConfiguration == .username)
        #expect(merged.userIdType == .username)

        details[ConfigurationKey.self] = nil
        #expect(details.userIdType == nil)
        #expect(details[ConfigurationKey.self] == nil)
    }

    @Test("merging keeps existing values unless asked and ORs flags")
    func merging() {
        var base = AccountDetails()
        base.biography = "old"
        base.isVerified = true
        var other = AccountDetails()
        other.biography = "new"
        other.loginCount = 2
        other.isNewUser = true
        let kept = base.merging(other)
        #expect(kept.biography == "old")
        #expect(kept.loginCount == 2)
        #expect(kept.isVerified && kept.isNewUser)
        let overwritten = base.merging(other, allowOverwrite: true)
        #expect(overwritten.biography == "new")
        #expect(!overwritten.isAnonymous && !overwritten.isIncomplete)
    }

    @Test("Codable writes identifiers, skips flags and decodes the given keys")
    func codable() throws {
        var details = signupDetails()
        details.accountId = "acc-1"
        details.biography = "Founder"
        details.isNewUser = true
        let data = try JSONEncoder().encode(details)
        let json = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(json.keys) == ["accountId", "userId", "password", "name", "genderIdentity", "dateOfBirth", "bio"])
        #expect(json["genderIdentity"] as? String == "male")

        let keys = AccountDetails.builtInKeys + [AccountDetails.__Key_biography.self]
        let decoded = try AccountDetails.decode(from: data, keys: keys)
        #expect(decoded.biography == "Founder")
        #expect(decoded.name?.givenName == "Leland")
        #expect(decoded.name?.familyName == "Stanford")
        #expect(!decoded.isNewUser)
        #expect(decoded.unknownValues.isEmpty)
        var expected = details
        expected.isNewUser = false
        #expect(decoded == expected)
    }

    @Test("unknown keys survive a round trip and can be resolved later")
    func unknownKeys() throws {
        var details = AccountDetails()
        details.accountId = "acc-1"
        details.biography = "Founder"
        details.tags = ["a", "b"]
        let data = try JSONEncoder().encode(details)

        // an older schema that knows neither "bio" nor "tags"
        let old = try AccountDetails.decode(from: data, keys: AccountDetails.builtInKeys)
        #expect(old.biography == nil)
        #expect(old.unknownValues["bio"] == .string("Founder"))
        #expect(old.unknownValues["tags"] == .array([.string("a"), .string("b")]))
        #expect(old.identifiers == ["accountId", "bio", "tags"])

        var reencoded = try AccountDetails.decode(
            from: JSONEncoder().encode(old),
            registry: AccountKeyRegistry(AccountDetails.builtInKeys + [AccountDetails.__Key_biography.self, AccountDetails.__Key_tags.self]))
        #expect(reencoded.biography == "Founder")
        #expect(reencoded.tags == ["a", "b"])
        #expect(reencoded.unknownValues.isEmpty)

        var resolved = old
        try resolved.resolveUnknownValues(using: AccountKeyRegistry([AccountDetails.__Key_biography.self]))
        #expect(resolved.biography == "Founder")
        #expect(resolved.unknownValues.keys.sorted() == ["tags"])
        reencoded.tags = nil
        #expect(resolved.biography == reencoded.biography)
    }

    @Test("per-key encoding round-trips known and unknown values")
    func perKey() throws {
        var details = signupDetails()
        details.accountId = "acc-1"
        details.biography = "Founder"
        let encoded = try details.encodedPerKey()
        #expect(encoded.keys.sorted() == ["accountId", "bio", "dateOfBirth", "genderIdentity", "name", "password", "userId"])
        let partial = try AccountDetails(perKey: encoded)
        #expect(partial.unknownValues.keys.sorted() == ["bio"])
        let again = try AccountDetails(
            perKey: partial.encodedPerKey(), registry: AccountKeyRegistry(AccountDetails.builtInKeys + [AccountDetails.__Key_biography.self]))
        #expect(again == details)
    }
}
