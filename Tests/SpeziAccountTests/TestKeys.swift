//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount

// Keys written in the exact shape the @AccountKey / @KeyEntry macros expand to.
extension AccountDetails {
    public var biography: String? {
        get { self[__Key_biography.self] }
        set { self[__Key_biography.self] = newValue }
    }

    public struct __Key_biography: AccountKey {
        public typealias Value = String
        public static let identifier: String = "bio"
        public static let name: String = "Biography"
        public static let category: AccountKeyCategory = .personalDetails
        public static let options: AccountKeyOptions = .default
        public static var initialValue: InitialValue<Value> { .empty("") }
    }

    public var newsletter: Bool? {
        get { self[__Key_newsletter.self] }
        set { self[__Key_newsletter.self] = newValue }
    }

    public struct __Key_newsletter: AccountKey {
        public typealias Value = Bool
        public static let identifier: String = "newsletter"
        public static let name: String = "Newsletter"
        public static let category: AccountKeyCategory = .custom("Preferences")
    }

    public var loginCount: Int? {
        get { self[__Key_loginCount.self] }
        set { self[__Key_loginCount.self] = newValue }
    }

    public struct __Key_loginCount: AccountKey {
        public typealias Value = Int
        public static let identifier: String = "loginCount"
        public static let name: String = "Login Count"
        public static let category: AccountKeyCategory = .other
        public static let options: AccountKeyOptions = .display
    }

    public var tags: [String]? {
        get { self[__Key_tags.self] }
        set { self[__Key_tags.self] = newValue }
    }

    public struct __Key_tags: AccountKey {
        public typealias Value = [String]
        public static let identifier: String = "tags"
        public static let name: String = "Tags"
        public static let category: AccountKeyCategory = .other
        public static let options: AccountKeyOptions = []
    }
}

extension AccountKeys {
    public var biography: AccountDetails.__Key_biography.Type { AccountDetails.__Key_biography.self }
    public var newsletter: AccountDetails.__Key_newsletter.Type { AccountDetails.__Key_newsletter.self }
    public var loginCount: AccountDetails.__Key_loginCount.Type { AccountDetails.__Key_loginCount.self }
    public var tags: AccountDetails.__Key_tags.Type { AccountDetails.__Key_tags.self }
}

/// Collects events in order from anywhere (standard, provider, subscribers).
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String] = []

    func append(_ entry: String) {
        lock.lock()
        entries.append(entry)
        lock.unlock()
    }

    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }
}

func describe(_ event: AccountNotifications.Event) -> String {
    switch event {
    case let .deletingAccount(id): "deletingAccount(\(id))"
    case let .associatedAccount(details): "associatedAccount(\(details.userId))"
    case let .detailsChanged(_, new): "detailsChanged(\(new.userId))"
    case let .disassociatingAccount(details): "disassociatingAccount(\(details.userId))"
    }
}

actor RecordingStandard: Standard, AccountNotifyConstraint {
    let log: EventLog
    private(set) var events: [AccountNotifications.Event] = []

    init(log: EventLog = EventLog()) {
        self.log = log
    }

    func respondToEvent(_ event: AccountNotifications.Event) {
        events.append(event)
        log.append("standard: \(describe(event))")
    }
}

/// The stream ended, or `next(_:of:within:)` waited out its deadline, before `wanted` events came.
struct MissingNotifications: Error, CustomStringConvertible {
    let wanted: Int
    let received: [String]
    let seconds: Double

    var description: String {
        "\(received.count) of \(wanted) notifications within \(seconds) s: \(received)"
    }
}

/// Takes the next `count` events of a stream, or throws `MissingNotifications` if they have not
/// all come within `seconds` (a hang guard: a missing notification fails its test, not the run).
func next(
    _ count: Int, of stream: AsyncStream<AccountNotifications.Event>, within seconds: Double = 60
) async throws -> [AccountNotifications.Event] {
    guard count > 0 else {
        return []
    }
    return try await withThrowingTaskGroup(of: [AccountNotifications.Event]?.self) { group in
        group.addTask {
            var result: [AccountNotifications.Event] = []
            for await event in stream {
                result.append(event)
                if result.count == count {
                    break
                }
            }
            return result
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        var received: [AccountNotifications.Event] = []
        // The first to end decides; after a timeout the reader, cancelled, returns what it had.
        while let outcome = try await group.next() {
            group.cancelAll()
            if let events = outcome {
                received = events
                break
            }
        }
        guard received.count == count else {
            throw MissingNotifications(wanted: count, received: received.map(describe), seconds: seconds)
        }
        return received
    }
}

func signupDetails(userId: String = "lelandstanford@stanford.edu", password: String = "StanfordRocks123!") -> AccountDetails {
    var details = AccountDetails()
    details.userId = userId
    details.password = password
    var name = PersonNameComponents()
    name.givenName = "Leland"
    name.familyName = "Stanford"
    details.name = name
    details.genderIdentity = .male
    details.dateOfBirth = Date(timeIntervalSince1970: 0)
    return details
}

/// The seed's initial-setup configuration.
let seedConfiguration: AccountValueConfiguration = [
    .requires(\.userId),
    .requires(\.password),
    .requires(\.name),
    .collects(\.dateOfBirth),
    .collects(\.genderIdentity)
]

/// Boots a runtime with an account configuration and returns the main pieces.
struct AccountHarness {
    let runtime: SpeziRuntime
    let account: Account
    let notifications: AccountNotifications
    let service: InMemoryAccountService

    init(
        service: InMemoryAccountService = InMemoryAccountService(),
        standard: some Standard = DefaultStandard(),
        configuration: AccountValueConfiguration = seedConfiguration,
        provider: (any AccountStorageProvider)? = nil
    ) async throws {
        let accountConfiguration: AccountConfiguration
        if let provider {
            accountConfiguration = Self.make(service: service, provider: provider, configuration: configuration)
        } else {
            accountConfiguration = AccountConfiguration(service: service, configuration: configuration)
        }
        runtime = SpeziRuntime(configuration: Configuration(standard: standard) { accountConfiguration })
        try await runtime.boot()
        account = accountConfiguration.account
        notifications = accountConfiguration.notifications
        self.service = service
    }

    private static func make<P: AccountStorageProvider>(
        service: InMemoryAccountService, provider: P, configuration: AccountValueConfiguration
    ) -> AccountConfiguration {
        AccountConfiguration(service: service, storageProvider: provider, configuration: configuration)
    }
}
