//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi

/// The account state of the application: whether a user is signed in and their details.
///
/// Account services update it with supplyUserDetails(_:) and removeUserDetails(). Other
/// modules read it with `@Dependency(Account.self)`.
// Unchecked Sendable: its state is held in a `SpeziLock`; modules are shared by reference, as upstream's.
public final class Account: Module, @unchecked Sendable {
    private struct State {
        var details: AccountDetails?
    }

    // The wrapper is assigned once in init; the runtime fills its locked box. State is locked.
    @Dependency(AccountNotifications.self) private var notifications
    private let state = SpeziLock(State())
    private let hasStorageProvider: Bool

    /// The configured account service.
    public let accountService: any AccountService
    /// The app's key configuration.
    public let configuration: AccountValueConfiguration

    /// Creates the account module for a service (usually done by AccountConfiguration).
    ///
    /// - Parameters:
    ///   - service: the account service that signs users in and keeps this module up to date.
    ///   - configuration: the keys the app uses and how much it asks for each.
    ///   - hasStorageProvider: whether an ``AccountStorageProvider`` stores the keys the service
    ///     cannot; ``configure()`` refuses such keys without one.
    public init(service: any AccountService, configuration: AccountValueConfiguration = .default, hasStorageProvider: Bool = false) {
        self.accountService = service
        self.configuration = configuration
        self.hasStorageProvider = hasStorageProvider
    }

    /// Checks the configuration (see AccountConfiguration/validate(service:values:hasStorageProvider:)).
    ///
    /// - Throws: ``AccountConfigurationError`` when the key configuration is invalid, the service's
    ///   supported keys lack the account id, or keys the service cannot store have no storage provider.
    public func configure() throws {
        try AccountConfiguration.validate(service: accountService.configuration, values: configuration, hasStorageProvider: hasStorageProvider)
    }

    /// Whether an account is associated.
    public var signedIn: Bool {
        state.current.details != nil
    }

    /// The details of the associated account (never containing the password).
    public var details: AccountDetails? {
        state.current.details
    }

    /// Associates details (after signup, login or a change).
    ///
    /// Strips the password, records the service's configuration in the details
    /// (`accountServiceConfiguration`, which sets their user id type), sets signedIn, then reports
    /// AccountNotifications/Event/associatedAccount(_:),
    /// or AccountNotifications/Event/detailsChanged(_:_:) when details were already associated.
    /// - Parameter details: the account's details; they must hold the account id. A password in them
    ///   is dropped.
    /// - Throws: AccountOperationError/missingAccountValue(_:) when there is no accountId.
    public func supplyUserDetails(_ details: AccountDetails) async throws {
        guard details.contains(AccountDetails.__Key_accountId.self) else {
            throw AccountOperationError.missingAccountValue([AccountDetails.__Key_accountId.name])
        }
        var details = details
        details.remove(AccountDetails.__Key_password.self)
        details.accountServiceConfiguration = accountService.configuration
        let newDetails = details
        let previous = state.withLock { state in
            let previous = state.details
            state.details = newDetails
            return previous
        }
        if let previous {
            try await notifications.reportEvent(.detailsChanged(previous, newDetails))
        } else {
            try await notifications.reportEvent(.associatedAccount(newDetails))
        }
    }

    /// Clears the associated account, then reports AccountNotifications/Event/disassociatingAccount(_:).
    public func removeUserDetails() async {
        let previous = state.withLock { state in
            let previous = state.details
            state.details = nil
            return previous
        }
        guard let previous else {
            return
        }
        // disassociation cannot fail: the provider's disassociate does not throw.
        try? await notifications.reportEvent(.disassociatingAccount(previous))
    }
}
