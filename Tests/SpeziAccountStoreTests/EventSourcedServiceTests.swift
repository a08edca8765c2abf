//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Spezi
import SpeziAccount
import Testing

@testable import SpeziAccountStore

extension AccountDetails {
    @AccountKey(id: "biography", name: "Biography", category: .personalDetails, as: String.self)
    var biography: String?
}

@KeyEntry(\.biography)
extension AccountKeys {}

let storeSeedConfiguration: AccountValueConfiguration = [
    .requires(\.userId), .requires(\.password), .requires(\.name), .collects(\.dateOfBirth), .collects(\.genderIdentity)
]

/// A booted Spezi runtime with the event-sourced service (and optionally the log-backed provider).
struct ServiceHarness {
    let runtime: SpeziRuntime
    let account: Account
    let notifications: AccountNotifications
    let service: EventSourcedAccountService

    init(
        store: AccountStore, supportedKeys: SupportedAccountKeys = .arbitrary,
        configuration: AccountValueConfiguration = storeSeedConfiguration, withProvider: Bool = false
    ) async throws {
        let service = EventSourcedAccountService(store: store, supportedKeys: supportedKeys, supportsAnonymousSignIn: true)
        let accountConfiguration =
            withProvider
            ? AccountConfiguration(service: service, storageProvider: EventSourcedStorageProvider(store: store), configuration: configuration)
            : AccountConfiguration(service: service, configuration: configuration)
        runtime = SpeziRuntime(configuration: Configuration { accountConfiguration })
        try await runtime.boot()
        account = accountConfiguration.account
        notifications = accountConfiguration.notifications
        self.service = service
    }
}

/// A short, comparable description of a notification.
func summary(_ event: AccountNotifications.Event) -> String {
    switch event {
    case let .deletingAccount(id): "deletingAccount(\(id))"
    case let .associatedAccount(details): "associatedAccount(\(details.userId), \(details.name?.givenName ?? "-"))"
    case let .detailsChanged(old, new): "detailsChanged(\(old.name?.givenName ?? "-") -> \(new.name?.givenName ?? "-"))"
    case let .disassociatingAccount(details): "disassociatingAccount(\(details.userId))"
    }
}

func collect<S: AsyncSequence>(_ count: Int, of sequence: S) async throws -> [S.Element] {
    var result: [S.Element] = []
    guard count > 0 else { return result }
    for try await element in sequence {
        result.append(element)
        if result.count == count { break }
    }
    return result
}

@Suite("Event-sourced account service, in a Spezi runtime", .timeLimit(.minutes(3)))
struct EventSourcedServiceTests {
    @Test("signup → modify → delete: exactly these events, these notifications, and the same ones derived from the log")
    func seedFlow() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let harness = try await ServiceHarness(store: store)
        let live = harness.notifications.events
        let derived = try await store.notifications()

        try await harness.service.signup(leland())
        let accountId = try #require(harness.account.details?.accountId)
        // Read-your-writes: Account and the cache show the signup when it returns.
        #expect(harness.account.details?.isNewUser == true)
        #expect(try store.details(of: accountId)?.name?.givenName == "Leland")

        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Jane", familyName: "Stanford")
        try await harness.service.updateAccountDetails(try AccountModifications(modifiedDetails: change))
        #expect(harness.account.details?.name?.givenName == "Jane")
        #expect(try store.details(of: accountId)?.name?.givenName == "Jane")

        // The log-derived feed, read before the deletion destroys the account's key (afterwards its
        // personal events read as redacted, and only the deletion would be reported with details).
        var feed = derived.makeAsyncIterator()
        var fromLog: [LoggedNotification] = []
        for _ in 0..<2 { if let next = try await feed.next() { fromLog.append(next) } }

        try await harness.service.delete()
        #expect(!harness.account.signedIn)
        #expect(try store.details(of: accountId) == nil)

        let records = try await store.log.read()
        #expect(records.map(\.type) == ["account.created", "account.details-modified", "account.deleted"])
        #expect(Set(records.map(\.streamID)) == [accountId])
        #expect(records.allSatisfy { $0.metadata.actor == "account-service" && $0.metadata.correlationID != nil })
        // The account's key is destroyed: its personal events can no longer be read (crypto-shredding).
        #expect(try store.accounts.event(from: records[0]) == .redacted(type: "account.created"))
        #expect(try store.accounts.event(from: records[1]) == .redacted(type: "account.details-modified"))
        await #expect(try store.log.verify().isIntact)

        let expected = [
            "associatedAccount(lelandstanford@stanford.edu, Leland)",
            "detailsChanged(Leland -> Jane)",
            "deletingAccount(\(accountId))",
            "disassociatingAccount(lelandstanford@stanford.edu)"
        ]
        #expect(try await collect(4, of: live).map(summary) == expected)
        for _ in 0..<2 { if let next = try await feed.next() { fromLog.append(next) } }
        // The feed kept up: it read the account's details before the shredding and still holds them
        // for the deletion's "before", as the live notifications do.
        #expect(fromLog.map { summary($0.event) } == expected)
        #expect(fromLog.map(\.position) == [1, 2, 3, 3])
        // Derived afresh after the shredding, the deletion's "before" has no details left (userId
        // falls back to the account id).
        #expect(
            try await store.notifications(for: records[2]).map { summary($0.event) } == [
                "deletingAccount(\(accountId))", "disassociatingAccount(\(accountId))"
            ])
        await store.close()
    }

    @Test("the README's sample boots and signs up (on a temporary directory)")
    func readmeSample() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        // As in the README's "The account store", but with test hashing parameters and a temporary path.
        let store = try await AccountStore(directory: fixture.directory.path, options: fixture.options())
        let configuration = AccountConfiguration(
            service: EventSourcedAccountService(store: store),
            configuration: [
                .requires(\.userId), .requires(\.password), .requires(\.name),
                .collects(\.dateOfBirth), .collects(\.genderIdentity)
            ]
        )
        let runtime = SpeziRuntime(configuration: Configuration { configuration })
        try await runtime.boot()
        let service = try #require(configuration.account.accountService as? EventSourcedAccountService)
        try await service.signup(leland())
        #expect(configuration.account.details?.genderIdentity == .male)
        await #expect(try store.log.read().map(\.type) == ["account.created"])
        await store.close()
    }

    @Test("login, logout and failed logins are recorded; a rejected operation appends nothing")
    func loginAndRejections() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let harness = try await ServiceHarness(store: store)
        try await harness.service.signup(leland())
        try await harness.service.logout()
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "wrong-password")
        }
        try await harness.service.login(userId: "LelandStanford@stanford.edu", password: "StanfordRocks123!")
        #expect(harness.account.details?.name?.givenName == "Leland")
        #expect(harness.account.details?.isNewUser == false)
        let before = try await store.log.lastPosition()

        var missingName = leland(userId: "jane@stanford.edu")
        missingName.name = nil
        try await harness.service.logout()
        await #expect(throws: AccountOperationError.missingAccountValue(["Name"])) { try await harness.service.signup(missingName) }
        await #expect(throws: AccountServiceError.credentialsTaken) { try await harness.service.signup(leland()) }
        await #expect(throws: AccountOperationError.self) { try await harness.service.signup(leland(userId: "jane@stanford.edu", password: "short")) }
        await #expect(
            try store.log.read().map(\.type) == [
                "account.created", "auth.logged-out", "auth.login-failed", "auth.login-succeeded", "auth.logged-out"
            ])
        await #expect(try store.log.lastPosition() == before + 1)
        await store.close()
    }

    @Test("anonymous sign-in, then signup upgrades the same account id")
    func anonymousUpgrade() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let harness = try await ServiceHarness(store: store)
        try await harness.service.signInAnonymously()
        let anonymousId = try #require(harness.account.details?.accountId)
        #expect(harness.account.details?.isAnonymous == true)
        try await harness.service.signup(leland())
        #expect(harness.account.details?.accountId == anonymousId)
        #expect(harness.account.details?.isAnonymous == false)
        await #expect(try store.log.read().map(\.type) == ["account.created", "account.anonymous-upgraded"])
        await store.close()
    }

    @Test("keys the service does not store go to the log-backed provider: external events, the external view, updatedDetails from other writers")
    func externalStorage() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let serviceKeys: [any AccountKey.Type] = [
            AccountDetails.__Key_accountId.self, AccountDetails.__Key_userId.self, AccountDetails.__Key_password.self,
            AccountDetails.__Key_name.self
        ]
        let configuration: AccountValueConfiguration = [
            .requires(\.userId), .requires(\.password), .requires(\.name), .collects(\.dateOfBirth), .collects(\.genderIdentity),
            .collects(\.biography)
        ]
        let harness = try await ServiceHarness(store: store, supportedKeys: .exactly(serviceKeys), configuration: configuration, withProvider: true)
        var signup = leland()
        signup.biography = "Founded a university"
        try await harness.service.signup(signup)
        let accountId = try #require(harness.account.details?.accountId)
        #expect(harness.account.details?.biography == "Founded a university")
        #expect(harness.account.details?.genderIdentity == .male)

        let types = try await store.log.read().map(\.type)
        #expect(types == ["account.created", "external.details-modified"])
        guard case let .accountCreated(_, _, _, values) = try await store.accounts.event(from: try store.log.read()[0]) else {
            Issue.record("expected account.created")
            return
        }
        #expect(Set(values.keys) == ["name"])
        #expect(Set(try store.externalValues(of: accountId).keys) == ["biography", "dateOfBirth", "genderIdentity"])

        var change = AccountDetails()
        change.biography = "Governor of California"
        try await harness.service.updateAccountDetails(AccountModifications(modifiedDetails: change))
        #expect(harness.account.details?.biography == "Governor of California")
        #expect(harness.account.details?.name?.givenName == "Leland")

        // Log out and back in: the service's keys from the cache, the others from the view.
        try await harness.service.logout()
        try await harness.service.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        // The view answers at once when it has caught up within the provider's patience (50 ms),
        // else the values follow through external storage (a loaded machine, in CI: up to 30 s).
        let loginDeadline = ContinuousClock.now + .seconds(30)
        while harness.account.details?.genderIdentity != .male && ContinuousClock.now < loginDeadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(harness.account.details?.biography == "Governor of California")
        #expect(harness.account.details?.genderIdentity == .male)

        // Another writer (another process, accountctl) changes an external value: it reaches Account.
        var other = AccountDetails()
        other.biography = "Senator"
        try await store.accounts.append(
            [.externalDetailsModified(modified: try other.encodedPerKey(), removed: [])],
            to: accountId, expectedVersion: .any, metadata: EventMetadata(actor: "admin"))
        // Commit → subscription → follower → Account takes several hops: up to 30 s on a loaded machine.
        let changeDeadline = ContinuousClock.now + .seconds(30)
        while harness.account.details?.biography != "Senator" && ContinuousClock.now < changeDeadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(harness.account.details?.biography == "Senator")

        // Deletion erases the external record through the provider, before account.deleted.
        try await harness.service.delete()
        await #expect(try store.log.read().suffix(2).map(\.type) == ["external.details-erased", "account.deleted"])
        #expect(try store.externalValues(of: accountId).isEmpty)
        await store.close()
    }
}
