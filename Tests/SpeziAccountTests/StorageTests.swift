//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import Testing

@Suite("External storage")
struct StorageTests {
    @Test("keys the service cannot store need a storage provider: a clear boot error otherwise")
    func missingProvider() async throws {
        let configuration = seedConfiguration + [.collects(\.biography)]
        let error = await #expect(throws: SpeziError.self) {
            _ = try await AccountHarness(configuration: configuration)
        }
        guard case let .moduleConfigurationFailed(module, underlying) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(module == "Account")
        #expect(underlying as? AccountConfigurationError == .missingStorageProvider(keys: ["bio"]))
        #expect(error?.description.contains("cannot store bio") == true)

        // with a provider it boots
        _ = try await AccountHarness(configuration: configuration, provider: InMemoryAccountStorageProvider())

        let badService = SpeziRuntime(configuration: Configuration { AccountConfiguration(service: NoAccountIdService()) })
        let second = await #expect(throws: SpeziError.self) { try await badService.boot() }
        guard case let .moduleConfigurationFailed(_, underlying) = second else {
            Issue.record("unexpected \(String(describing: second))")
            return
        }
        #expect(underlying as? AccountConfigurationError == .supportedKeysMissAccountId)
    }

    @Test("the in-memory service stores other keys with the provider, through every operation")
    func inMemoryProvider() async throws {
        let provider = InMemoryAccountStorageProvider()
        let harness = try await AccountHarness(configuration: seedConfiguration + [.collects(\.biography)], provider: provider)
        var details = signupDetails()
        details.biography = "Founder"
        try await harness.service.signup(details)
        let accountId = try #require(harness.account.details?.accountId)
        #expect(harness.account.details?.biography == "Founder")
        #expect(await provider.record(for: accountId)?.biography == "Founder")
        #expect(await provider.record(for: accountId)?.name == nil)

        var bio = AccountDetails()
        bio.biography = "Governor"
        try await harness.service.updateAccountDetails(AccountModifications(modifiedDetails: bio))
        #expect(await provider.record(for: accountId)?.biography == "Governor")

        try await harness.service.logout()
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        #expect(harness.account.details?.biography == "Governor")
        #expect(harness.account.details?.isIncomplete == false)

        try await harness.service.delete()
        #expect(await provider.record(for: accountId) == nil)
    }

    @Test("deletion order: standard, provider delete, subscribers; then disassociation")
    func deletionOrder() async throws {
        let log = EventLog()
        let provider = MyProvider(log: log)
        let harness = try await AccountHarness(
            standard: RecordingStandard(log: log),
            configuration: seedConfiguration + [.collects(\.biography)],
            provider: provider
        )
        let events = harness.notifications.events
        let subscriber = Task {
            for await event in events {
                log.append("subscriber: \(describe(event))")
                if case .disassociatingAccount = event {
                    break
                }
            }
        }
        var details = signupDetails()
        details.biography = "Founder"
        try await harness.service.signup(details)
        let accountId = try #require(harness.account.details?.accountId)
        try await harness.service.delete()
        await subscriber.value
        let user = "lelandstanford@stanford.edu"
        let all = log.all
        #expect(
            all.filter { !$0.hasPrefix("subscriber") } == [
                "provider: create",
                "provider: modify",
                "standard: associatedAccount(\(user))",
                "standard: deletingAccount(\(accountId))",
                "provider: delete",
                "standard: disassociatingAccount(\(user))",
                "provider: disassociate"
            ])
        #expect(
            all.filter { $0.hasPrefix("subscriber") } == [
                "subscriber: associatedAccount(\(user))",
                "subscriber: deletingAccount(\(accountId))",
                "subscriber: disassociatingAccount(\(user))"
            ])
        // a subscriber hears deletingAccount only after the provider deleted
        let providerDelete = try #require(all.firstIndex(of: "provider: delete"))
        let subscriberDelete = try #require(all.firstIndex(of: "subscriber: deletingAccount(\(accountId))"))
        #expect(providerDelete < subscriberDelete)
    }

    @Test("a failing provider delete aborts the deletion")
    func failingDelete() async throws {
        let log = EventLog()
        let provider = MyProvider(log: log, failDelete: true)
        let harness = try await AccountHarness(configuration: seedConfiguration + [.collects(\.biography)], provider: provider)
        var details = signupDetails()
        details.biography = "Founder"
        try await harness.service.signup(details)
        let accountId = try #require(harness.account.details?.accountId)
        await #expect(throws: AccountServiceError.internalError) { try await harness.service.delete() }
        #expect(harness.account.signedIn)
        #expect(await harness.service.accountCount == 1)
        #expect(await provider.record(accountId)?.biography == "Founder")
        #expect(!log.all.contains("provider: disassociate"))
    }

    @Test("a nil load yields incomplete details, completed later through updatedDetails")
    func remoteFetch() async throws {
        let provider = InMemoryAccountStorageProvider(simulatesRemoteFetch: true)
        let harness = try await AccountHarness(configuration: seedConfiguration + [.collects(\.biography)], provider: provider)
        var details = signupDetails()
        details.biography = "Founder"
        try await harness.service.signup(details)
        try await harness.service.logout()  // clears the provider's cache
        let events = harness.notifications.events
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        let received = try await next(2, of: events)
        guard case let .associatedAccount(first) = received[0], case let .detailsChanged(old, new) = received[1] else {
            Issue.record("unexpected events \(received)")
            return
        }
        #expect(first.isIncomplete)
        #expect(first.biography == nil)
        #expect(old.isIncomplete)
        #expect(!new.isIncomplete)
        #expect(new.biography == "Founder")
        #expect(harness.account.details?.biography == "Founder")
    }

    @Test("a provider that delivers the values before its load answers nil: the login still gets them")
    func deliveryBeforeLoadReturns() async throws {
        let provider = EagerRemoteProvider()
        let harness = try await AccountHarness(configuration: seedConfiguration + [.collects(\.biography)], provider: provider)
        var details = signupDetails()
        details.biography = "Founder"
        try await harness.service.signup(details)
        try await harness.service.logout()
        let events = harness.notifications.events
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        let received = try await next(2, of: events, within: 20)
        guard case let .associatedAccount(first) = received[0], case let .detailsChanged(_, new) = received[1] else {
            Issue.record("unexpected events \(received.map(describe))")
            return
        }
        // The order the test is about: the update was delivered while the login waited for `load`.
        #expect(await provider.deliveredBeforeAnswering == 1)
        #expect(first.isIncomplete)
        #expect(new.biography == "Founder")
        #expect(harness.account.details?.biography == "Founder")
    }

    @Test("next(_:of:) gives up at its deadline with what it received")
    func notificationDeadline() async throws {
        let (stream, continuation) = AsyncStream<AccountNotifications.Event>.makeStream()
        continuation.yield(.deletingAccount("acc"))
        let error = await #expect(throws: MissingNotifications.self) {
            try await next(2, of: stream, within: 0.2)
        }
        #expect(error?.received == ["deletingAccount(acc)"])
        #expect(error?.wanted == 2)
    }

    @Test("ExternalAccountStorage: empty requests do nothing, no keys give empty details, non-mutable keys are refused")
    func externalStorageRules() async throws {
        let without = ExternalAccountStorage()
        try await without.requestExternalStorage(of: AccountDetails(), for: "acc")
        try await without.updateExternalStorage(with: AccountModifications(modifiedDetails: AccountDetails()), for: "acc")
        #expect(try await without.retrieveExternalStorage(for: "acc", []).isEmpty)
        var bio = AccountDetails()
        bio.biography = "x"
        await #expect(throws: AccountConfigurationError.noStorageProviderConfigured) {
            try await without.requestExternalStorage(of: bio, for: "acc")
        }
        var count = AccountDetails()
        count.loginCount = 1
        await #expect(throws: AccountOperationError.mutatingNonMutableAccountKeys(["loginCount"])) {
            try await without.updateExternalStorage(with: AccountModifications(modifiedDetails: count), for: "acc")
        }

        let updates = without.updatedDetails
        let second = without.updatedDetails
        var incomplete = bio
        incomplete.isIncomplete = true
        without.notifyAboutUpdatedDetails(for: "acc", incomplete)
        var iterator = updates.makeAsyncIterator()
        var secondIterator = second.makeAsyncIterator()
        let update = await iterator.next()
        let secondUpdate = await secondIterator.next()
        #expect(update?.accountId == "acc")
        #expect(update?.details.biography == "x")
        #expect(update?.details.isIncomplete == false)
        #expect(secondUpdate == update)
    }

    @Test("AccountDetailsCache keeps entries in memory in front of disk and clears them")
    func cache() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spezi-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = AccountDetailsCache(directory: directory)
        let keys: [any AccountKey.Type] = [AccountDetails.__Key_biography.self, AccountDetails.__Key_name.self]
        #expect(cache.loadEntry(for: "acc/1", keys) == nil)
        var details = AccountDetails()
        details.biography = "Founder"
        cache.communicateRemoteChanges(for: "acc/1", details)
        var name = AccountDetails()
        name.name = PersonNameComponents(givenName: "Leland")
        cache.communicateModifications(for: "acc/1", try AccountModifications(modifiedDetails: name))
        cache.purgeMemoryCache()
        let loaded = try #require(cache.loadEntry(for: "acc/1", keys))
        #expect(loaded.biography == "Founder")
        #expect(loaded.name?.givenName == "Leland")
        #expect(cache.loadEntry(for: "acc/1", [AccountDetails.__Key_biography.self])?.keys.count == 1)
        cache.clearEntry(for: "acc/1")
        cache.purgeMemoryCache()
        #expect(cache.loadEntry(for: "acc/1", keys) == nil)
    }

    @Test("the seed's minimal service works with the runtime")
    func seedService() async throws {
        let service = MyAccountService()
        let configuration = AccountConfiguration(service: service, configuration: seedConfiguration)
        let runtime = SpeziRuntime(configuration: Configuration { configuration })
        try await runtime.boot()
        let events = configuration.notifications.events
        var details = signupDetails()
        details.accountId = "acc-1"
        try await configuration.account.supplyUserDetails(details)
        try await service.delete()
        #expect(!configuration.account.signedIn)
        #expect(
            try await next(3, of: events).map(describe) == [
                "associatedAccount(lelandstanford@stanford.edu)",
                "deletingAccount(acc-1)",
                "disassociatingAccount(lelandstanford@stanford.edu)"
            ])
        #expect(seedServiceConfiguration.requiredAccountKeys.count == 2)
        #expect(runtime.module(Account.self) === configuration.account)
    }
}

/// A remote-looking provider whose `load` delivers the stored values (through
/// `notifyAboutUpdatedDetails`) and lets them be handled before it answers nil: the order in which
/// a fast remote fetch beats the login.
actor EagerRemoteProvider: AccountStorageProvider {
    @Dependency(ExternalAccountStorage.self) private var storage
    private var records: [String: AccountDetails] = [:]
    private(set) var deliveredBeforeAnswering = 0

    func create(_ accountId: String, _ details: AccountDetails) async throws {
        try await modify(accountId, AccountModifications(modifiedDetails: details))
    }

    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails? {
        guard let stored = records[accountId] else {
            return AccountDetails()
        }
        storage.notifyAboutUpdatedDetails(for: accountId, stored.filtered(to: keys))
        deliveredBeforeAnswering += 1
        // The service handles the update while the login is suspended here.
        try await Task.sleep(for: .milliseconds(200))
        return nil
    }

    func modify(_ accountId: String, _ modifications: AccountModifications) async throws {
        records[accountId] = modifications.applied(to: records[accountId] ?? AccountDetails())
    }

    func disassociate(_ accountId: String) async {}

    func delete(_ accountId: String) async throws {
        records[accountId] = nil
    }
}
