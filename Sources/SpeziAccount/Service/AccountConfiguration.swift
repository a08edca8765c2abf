//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi

/// Configures SpeziAccount: the AccountService, an optional AccountStorageProvider and the
/// app's AccountValueConfiguration. It brings along Account, AccountNotifications and
/// ExternalAccountStorage.
///
/// ```swift
/// Configuration {
///     AccountConfiguration(
///         service: InMemoryAccountService(),
///         configuration: [.requires(\.userId), .requires(\.password), .requires(\.name),
///                         .collects(\.dateOfBirth), .collects(\.genderIdentity)]
///     )
/// }
/// ```
/// Booting fails with an AccountConfigurationError when configured keys cannot be stored by the
/// service and no storage provider is configured.
// Unchecked Sendable: its settings never change after init; its dependencies are filled by the runtime before `configure()`.
public final class AccountConfiguration: Module, @unchecked Sendable {
    // Assigned once in init.
    @Dependency private var modules: [any Module]
    /// The account module.
    public let account: Account
    /// The notifications module.
    public let notifications: AccountNotifications
    /// The external storage module.
    public let externalStorage: ExternalAccountStorage

    /// A configuration with a service and the keys the app uses.
    ///
    /// - Parameters:
    ///   - service: the account service.
    ///   - configuration: the keys the app uses and how much it asks for each; every one must be a key
    ///     the service can store.
    public init<Service: AccountService>(service: Service, configuration: AccountValueConfiguration = .default) {
        self.account = Account(service: service, configuration: configuration, hasStorageProvider: false)
        self.notifications = AccountNotifications()
        self.externalStorage = ExternalAccountStorage(provider: nil)
        self._modules = Dependency(wrappedValue: [notifications, externalStorage, account, service])
    }

    /// A configuration with a service, a storage provider for the keys the service cannot store, and the keys the app uses.
    ///
    /// - Parameters:
    ///   - service: the account service.
    ///   - storageProvider: where the keys the service cannot store go.
    ///   - configuration: the keys the app uses and how much it asks for each.
    public init<Service: AccountService, Provider: AccountStorageProvider>(
        service: Service,
        storageProvider: Provider,
        configuration: AccountValueConfiguration = .default
    ) {
        self.account = Account(service: service, configuration: configuration, hasStorageProvider: true)
        self.notifications = AccountNotifications()
        self.externalStorage = ExternalAccountStorage(provider: storageProvider)
        self._modules = Dependency(wrappedValue: [notifications, externalStorage, account, storageProvider, service])
    }

    /// Checks a configuration: valid requirements, a supported-keys set that includes accountId, and
    /// a storage provider when configured keys fall outside the service's supported keys.
    ///
    /// - Parameters:
    ///   - service: what the account service supports.
    ///   - values: the app's key configuration.
    ///   - hasStorageProvider: whether a storage provider is configured.
    /// - Throws: `AccountConfigurationError.duplicateKey(_:)` or `.invalidRequirement(keys:)` for a bad
    ///   key configuration, `.supportedKeysMissAccountId` when the service's keys lack the account id,
    ///   `.missingStorageProvider(keys:)` for keys the service cannot store and no provider takes.
    public static func validate(
        service: AccountServiceConfiguration,
        values: AccountValueConfiguration,
        hasStorageProvider: Bool
    ) throws(AccountConfigurationError) {
        try values.validate()
        guard case let .exactly(supported) = service.supportedKeys else {
            return
        }
        guard supported.contains(where: { $0.identifier == AccountDetails.__Key_accountId.identifier }) else {
            throw .supportedKeysMissAccountId
        }
        let unsupported = values.keys.filter { !service.supportedKeys.canStore($0) }
        if !unsupported.isEmpty && !hasStorageProvider {
            throw .missingStorageProvider(keys: unsupported.map { $0.identifier })
        }
    }

    /// The configured keys the service cannot store itself (they go to the storage provider).
    ///
    /// - Parameters:
    ///   - service: what the account service supports.
    ///   - values: the app's key configuration.
    /// - Returns: the configured keys outside the service's supported keys, in configuration order.
    public static func externallyStoredKeys(service: AccountServiceConfiguration, values: AccountValueConfiguration) -> [any AccountKey.Type] {
        values.keys.filter { !service.supportedKeys.canStore($0) }
    }
}
