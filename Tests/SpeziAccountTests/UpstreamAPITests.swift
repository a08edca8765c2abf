//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

/// Encodes details with a configuration, as a caller's own `Encodable` would.
private struct EncodedWith: Encodable {
    let details: AccountDetails
    let configuration: AccountDetails.EncodingConfiguration

    func encode(to encoder: any Encoder) throws {
        try details.encode(to: encoder, configuration: configuration)
    }
}

/// Decodes details with a configuration handed over in `userInfo`.
private struct DecodedWith: Decodable {
    static let key = CodingUserInfoKey(rawValue: "test.configuration")!
    let details: AccountDetails

    init(from decoder: any Decoder) throws {
        guard let configuration = decoder.userInfo[Self.key] as? AccountDetails.DecodingConfiguration else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "no configuration"))
        }
        details = try AccountDetails(from: decoder, configuration: configuration)
    }

    static func decode(_ data: Data, _ configuration: AccountDetails.DecodingConfiguration) throws -> AccountDetails {
        let decoder = JSONDecoder()
        decoder.userInfo[key] = configuration
        return try decoder.decode(DecodedWith.self, from: data).details
    }
}

@Suite("Upstream API: LocalizedError, cache settings, coding configurations, key collections")
struct UpstreamAPITests {
    @Test("AccountOperationError is a LocalizedError with a description, a reason and a suggestion")
    func localizedError() {
        let error = AccountOperationError.missingAccountValue(["Name"])
        let erased: any Error = error
        #expect(erased.localizedDescription == "Missing required account values: Name")
        #expect(error.errorDescription == error.description)
        #expect(error.failureReason != nil)
        #expect(error.recoverySuggestion == "Provide every required value and try again.")
        let invalid = AccountOperationError.invalidValue(key: "password", rule: "minimalPassword", message: "Too short.")
        #expect(invalid.recoverySuggestion == "Too short.")
    }

    @Test("AccountDetailsCache: on disk by default, init(settings:), purgeMemoryCache(for:)")
    func cacheSettings() throws {
        #expect(AccountDetailsCache().directory == LocalStorageSetting.defaultDirectory)
        #expect(AccountDetailsCache(settings: .unencrypted()).directory == LocalStorageSetting.defaultDirectory)
        #expect(AccountDetailsCache(settings: .encryptedUsingKeychain()).directory == nil)
        #expect(AccountDetailsCache(settings: .encryptedUsingSecureEnclave(userPresence: true)).directory == nil)
        #expect(AccountDetailsCache.memoryOnly().directory == nil)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = [AccountDetails.__Key_biography.self]
        var details = AccountDetails()
        details.biography = "on disk"
        let onDisk = AccountDetailsCache(directory: directory)
        onDisk.communicateRemoteChanges(for: "a", details)
        onDisk.purgeMemoryCache(for: "a")
        #expect(onDisk.loadEntry(for: "a", keys)?.biography == "on disk")

        let inMemory = AccountDetailsCache.memoryOnly()
        inMemory.communicateRemoteChanges(for: "a", details)
        inMemory.communicateRemoteChanges(for: "b", details)
        inMemory.purgeMemoryCache(for: "a")
        #expect(inMemory.loadEntry(for: "a", keys) == nil)
        #expect(inMemory.loadEntry(for: "b", keys)?.biography == "on disk")
    }

    @Test("AccountDetails with EncodingConfiguration and DecodingConfiguration: identifier mapping, required keys")
    func codingConfigurations() throws {
        var details = AccountDetails()
        details.biography = "renamed"
        details.newsletter = true
        let mapping: [String: any AccountKey.Type] = ["aboutMe": AccountDetails.__Key_biography.self]
        let data = try JSONEncoder().encode(EncodedWith(details: details, configuration: .init(identifierMapping: mapping)))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["aboutMe", "newsletter"])

        let keys: [any AccountKey.Type] = [AccountDetails.__Key_biography.self, AccountDetails.__Key_newsletter.self]
        let decoded = try DecodedWith.decode(data, AccountDetails.DecodingConfiguration(keys: keys, identifierMapping: mapping))
        #expect(decoded == details)

        // without the mapping, "aboutMe" is an unknown value and survives a round trip
        let unmapped = try DecodedWith.decode(data, AccountDetails.DecodingConfiguration(keys: keys))
        #expect(unmapped.biography == nil)
        #expect(unmapped.unknownValues["aboutMe"] != nil)

        let strict = AccountDetails.DecodingConfiguration(
            keys: keys + [AccountDetails.__Key_tags.self], identifierMapping: mapping, requireAllKeys: true)
        #expect(throws: DecodingError.self) {
            try DecodedWith.decode(data, strict)
        }
    }

    @Test("SupportedAccountKeys.exactly takes an array, an AccountKeyCollection or a builder")
    func exactlyVariants() {
        let collection = AccountKeyCollection {
            \.accountId
            \.userId
            if Bool.random() {
                \.name
            } else {
                \.name
            }
        }
        #expect(collection.count == 3)
        #expect(collection.contains(AccountDetails.__Key_userId.self))
        let fromCollection = SupportedAccountKeys.exactly(collection)
        let fromBuilder = SupportedAccountKeys.exactly {
            \.accountId
            \.userId
            \.name
        }
        let fromArray = SupportedAccountKeys.exactly([
            AccountDetails.__Key_accountId.self, AccountDetails.__Key_userId.self, AccountDetails.__Key_name.self
        ])
        for supported in [fromCollection, fromBuilder, fromArray] {
            #expect(supported.canStore(AccountDetails.__Key_name.self))
            #expect(!supported.canStore(AccountDetails.__Key_biography.self))
        }
        var smaller = collection
        smaller.removeAll([AccountDetails.__Key_name.self])
        #expect(smaller.map { $0.identifier } == ["accountId", "userId"])
    }
}
