//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import Testing

// The seed's sample ("Adding account values"), verbatim but for the key's name.
extension AccountDetails {
    @AccountKey(name: "Profile text", category: .personalDetails, as: String.self)
    var profileText: String?

    @AccountKey(id: "favorite-number", name: "Favorite number", category: .other, as: Int.self, initial: .default(7))
    var favoriteNumber: Int?
}

/// The seed's second biography sample ("Adding account values", customizing the views): the views
/// keep the seed's initializers; their SwiftUI bodies are Apple-only and left out here.
private struct EntryView: DataEntryView {
    typealias Value = String
}

/// The seed's display view, without its SwiftUI body.
private struct DisplayView: DataDisplayView {
    private let value: String

    init(_ value: String) {
        self.value = value
    }
}

extension AccountDetails {
    @AccountKey(
        name: "Biography",
        category: .personalDetails,
        as: String.self,
        displayView: DisplayView.self,
        entryView: EntryView.self
    )
    var viewedBiography: String?

    @AccountKey(name: "Lucky number", as: Int.self, initial: .default(3), displayView: NumberView.self, entryView: NumberEntry.self)
    var luckyNumber: Int?
}

/// Views for an `Int` key.
private struct NumberView: DataDisplayView {
    init(_ value: Int) {}
}

/// An entry view for an `Int` key.
private struct NumberEntry: DataEntryView {
    typealias Value = Int
}

@KeyEntry(\.profileText, \.favoriteNumber, \.viewedBiography, \.luckyNumber)
extension AccountKeys {}

@Suite("Keys declared with the macros")
struct MacroKeyTests {
    @Test("a macro-declared key has the declared identity and reads and writes like a built-in one")
    func declaration() {
        let profile = AccountKeys.key(\.profileText)
        #expect(profile.identifier == "profileText")
        #expect(profile.name == "Profile text")
        #expect(profile.category == .personalDetails)
        #expect(profile.options == .default)
        #expect(profile.initialValue == .empty(""))
        let number = AccountKeys.key(\.favoriteNumber)
        #expect(number.identifier == "favorite-number")
        #expect(number.initialValue == .default(7))

        var details = AccountDetails()
        details.profileText = "Founder of a university"
        details.favoriteNumber = 42
        #expect(details[AccountDetails.__Key_profileText.self] == "Founder of a university")

        // Keys declared with the seed's views behave like any other (the views are not drawn on Linux).
        let biography = AccountKeys.key(\.viewedBiography)
        #expect(biography.name == "Biography" && biography.category == .personalDetails && biography.initialValue == .empty(""))
        #expect(AccountKeys.key(\.luckyNumber).initialValue == .default(3))
        var viewed = AccountDetails()
        viewed.viewedBiography = "Governor of California"
        #expect(viewed.viewedBiography == "Governor of California")
        #expect(details.identifiers.sorted() == ["favorite-number", "profileText"])
        details.favoriteNumber = nil
        #expect(!details.contains(number))
    }

    @Test("a macro-declared key round-trips through AccountDetails coding, and survives as unknown without its key")
    func coding() throws {
        var details = signupDetails()
        details.accountId = "a1"
        details.profileText = "Governor"
        details.favoriteNumber = 42
        let data = try JSONEncoder().encode(details)
        let keys = AccountDetails.builtInKeys + [AccountKeys.key(\.profileText), AccountKeys.key(\.favoriteNumber)]
        let decoded = try AccountDetails.decode(from: data, keys: keys)
        #expect(decoded.profileText == "Governor")
        #expect(decoded.favoriteNumber == 42)
        #expect(decoded.name?.givenName == "Leland")
        // A reader that does not know the keys keeps their values and writes them back.
        let older = try AccountDetails.decode(from: data, keys: AccountDetails.builtInKeys)
        #expect(older.unknownValues["favorite-number"] == .integer(42))
        let again = try AccountDetails.decode(from: try JSONEncoder().encode(older), keys: keys)
        #expect(again.profileText == "Governor")
        #expect(again.favoriteNumber == 42)
    }

    @Test("a macro-declared key the service cannot store goes through external storage and comes back")
    func externalStorage() async throws {
        let provider = InMemoryAccountStorageProvider()
        let harness = try await AccountHarness(
            configuration: seedConfiguration + [.collects(\.profileText), .supports(\.favoriteNumber)],
            provider: provider)
        var details = signupDetails()
        details.profileText = "Founder"
        details.favoriteNumber = 3
        try await harness.service.signup(details)
        let accountId = try #require(harness.account.details?.accountId)
        #expect(await provider.record(for: accountId)?.profileText == "Founder")
        #expect(await provider.record(for: accountId)?.favoriteNumber == 3)

        var change = AccountDetails()
        change.favoriteNumber = 4
        try await harness.service.updateAccountDetails(AccountModifications(modifiedDetails: change))
        try await harness.service.logout()
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        #expect(harness.account.details?.profileText == "Founder")
        #expect(harness.account.details?.favoriteNumber == 4)
    }
}

@Suite("The README's sample")
struct ReadmeSampleTests {
    @Test("the README's configuration boots and keeps biography with the storage provider")
    func readmeConfiguration() async throws {
        let configuration = AccountConfiguration(
            service: InMemoryAccountService(),
            storageProvider: InMemoryAccountStorageProvider(),
            configuration: [
                .requires(\.userId), .requires(\.password), .requires(\.name),
                .collects(\.dateOfBirth), .collects(\.genderIdentity), .collects(\.biography)
            ]
        )
        let runtime = SpeziRuntime(configuration: Configuration { configuration })
        try await runtime.boot()
        #expect(configuration.account.configuration.keys.contains { $0.identifier == "bio" })
    }
}
