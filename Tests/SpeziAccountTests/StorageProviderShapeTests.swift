//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import Testing

/// A provider written with upstream SpeziAccount 2.3.5's requirements: a non-throwing `load`,
/// `store` for modifications, no `create` or `modify`.
private actor UpstreamShapedProvider: AccountStorageProvider {
    private(set) var calls: [String] = []
    private var records: [String: AccountDetails] = [:]

    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async -> AccountDetails? {
        calls.append("load")
        return (records[accountId] ?? AccountDetails()).filtered(to: keys)
    }

    func store(_ accountId: String, _ modifications: AccountModifications) async throws {
        calls.append("store(modifications)")
        records[accountId] = modifications.applied(to: records[accountId] ?? AccountDetails())
    }

    func disassociate(_ accountId: String) async {
        calls.append("disassociate")
    }

    func delete(_ accountId: String) async throws {
        calls.append("delete")
        records[accountId] = nil
    }
}

/// The same, also with upstream's optional `store` for a new account's details.
private actor UpstreamShapedWithCreate: AccountStorageProvider {
    private(set) var calls: [String] = []

    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async -> AccountDetails? { AccountDetails() }
    func store(_ accountId: String, _ details: AccountDetails) async throws { calls.append("store(details)") }
    func store(_ accountId: String, _ modifications: AccountModifications) async throws { calls.append("store(modifications)") }
    func disassociate(_ accountId: String) async {}
    func delete(_ accountId: String) async throws {}
}

/// A provider written as the seeds show it: `create`, a throwing `load`, `modify`.
private actor SeedShapedProvider: AccountStorageProvider {
    private(set) var calls: [String] = []

    func create(_ accountId: String, _ details: AccountDetails) async throws { calls.append("create") }
    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails? { AccountDetails() }
    func modify(_ accountId: String, _ modifications: AccountModifications) async throws { calls.append("modify") }
    func disassociate(_ accountId: String) async {}
    func delete(_ accountId: String) async throws {}
}

/// A provider that implements no write at all.
private actor WritelessProvider: AccountStorageProvider {
    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async -> AccountDetails? { nil }
    func disassociate(_ accountId: String) async {}
    func delete(_ accountId: String) async throws {}
}

@Suite("AccountStorageProvider: upstream's and the seeds' requirements both work")
struct StorageProviderShapeTests {
    private func biography(_ text: String) -> AccountDetails {
        var details = AccountDetails()
        details.biography = text
        return details
    }

    @Test("a provider in upstream's shape is called through every operation of the in-memory service")
    func upstreamShape() async throws {
        let provider = UpstreamShapedProvider()
        let configuration: AccountValueConfiguration = [.requires(\.userId), .requires(\.password), .collects(\.biography)]
        let harness = try await AccountHarness(configuration: configuration, provider: provider)
        var details = signupDetails()
        details.biography = "first"
        try await harness.service.signup(details)
        #expect(harness.account.details?.biography == "first")
        try await harness.service.updateAccountDetails(AccountModifications(modifiedDetails: biography("second")))
        try await harness.service.logout()
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        #expect(harness.account.details?.biography == "second")
        try await harness.service.delete()
        #expect(await provider.calls == ["store(modifications)", "store(modifications)", "disassociate", "load", "delete", "disassociate"])
    }

    @Test("create goes to upstream's store(details) when a provider has it; the seeds' names are called directly")
    func forwarding() async throws {
        let withCreate = UpstreamShapedWithCreate()
        let storage = ExternalAccountStorage(withCreate)  // upstream's initializer
        #expect(storage.provider === withCreate)
        try await storage.requestExternalStorage(of: biography("x"), for: "a")
        try await storage.updateExternalStorage(with: AccountModifications(modifiedDetails: biography("y")), for: "a")
        #expect(await withCreate.calls == ["store(details)", "store(modifications)"])

        let seed = SeedShapedProvider()
        let seedStorage = ExternalAccountStorage(provider: seed)
        try await seedStorage.requestExternalStorage(of: biography("x"), for: "a")
        try await seedStorage.updateExternalStorage(with: AccountModifications(modifiedDetails: biography("y")), for: "a")
        // upstream's names reach the seeds' implementations too
        try await seed.store("a", biography("z"))
        try await seed.store("a", AccountModifications(modifiedDetails: biography("w")))
        #expect(await seed.calls == ["create", "modify", "modify", "modify"])
    }

    @Test("a provider without any write fails with a clear error instead of recursing")
    func writeless() async throws {
        let storage = ExternalAccountStorage(provider: WritelessProvider())
        await #expect(
            throws: AccountStorageProviderError.missingImplementation("modify(_:_:) nor store(_:_:) with AccountModifications")
        ) {
            try await storage.requestExternalStorage(of: biography("x"), for: "a")
        }
        await #expect(throws: AccountStorageProviderError.self) {
            try await storage.updateExternalStorage(with: AccountModifications(modifiedDetails: biography("y")), for: "a")
        }
    }
}
