//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi

/// An AccountService keeping accounts in memory: for tests, demos and as a reference.
///
/// It stores exactly accountId, userId, password, name, genderIdentity and dateOfBirth (other keys
/// go to the configured AccountStorageProvider) and requires userId and password. Passwords are
/// kept in the clear: never use it for real accounts.
public actor InMemoryAccountService: AccountService {
    struct Record: Sendable {
        var userId: String?
        var password: String?
        /// The supported values, without password.
        var details: AccountDetails
    }

    /// The keys this service stores itself.
    public static let supportedKeys: [any AccountKey.Type] = [
        AccountDetails.__Key_accountId.self, AccountDetails.__Key_userId.self, AccountDetails.__Key_password.self,
        AccountDetails.__Key_name.self, AccountDetails.__Key_genderIdentity.self, AccountDetails.__Key_dateOfBirth.self
    ]

    /// What the service supports: its user id type, the keys it stores and its required keys.
    public nonisolated let configuration: AccountServiceConfiguration

    @Dependency(Account.self) private var account
    @Dependency(AccountNotifications.self) private var notifications
    @Dependency(ExternalAccountStorage.self) private var externalStorage

    @IdentityProvider(section: .primary) private var userIdPassword = UserIdPasswordSetup()
    @IdentityProvider private var anonymousSignup: AnonymousSignupSetup
    @SecurityRelatedModifier private var securityModifier: any SecurityRelatedAuthentication

    private var records: [String: Record] = [:]
    private var updatesTask: Task<Void, Never>?
    /// The account a login is signing in (between its storage read and its details being
    /// supplied), and an update the provider delivered for it meanwhile: applied once it is
    /// signed in, not dropped as an update for an account that is not.
    private var signingIn: (accountId: String, update: ExternalAccountStorage.ExternallyStoredDetails?)?

    /// Creates the service.
    ///
    /// - Parameters:
    ///   - userIdType: the kind of user id.
    ///   - supportsAnonymousSignIn: whether anonymous sign-in is offered as a setup option.
    ///   - security: the step-up re-authentication hook that delete and credential changes pass.
    ///   - validationRules: validation rules overriding the defaults.
    public init(
        _ userIdType: UserIdConfiguration = .emailAddress,
        supportsAnonymousSignIn: Bool = false,
        security: any SecurityRelatedAuthentication = AlwaysAuthenticated(),
        validationRules: [FieldValidationRules] = []
    ) {
        self.configuration = AccountServiceConfiguration(supportedKeys: .exactly(Self.supportedKeys)) {
            userIdType
            RequiredAccountKeys {
                \.userId
                \.password
            }
        }.adding(validationRules)
        self._securityModifier = SecurityRelatedModifier(wrappedValue: security)
        self._anonymousSignup = IdentityProvider(wrappedValue: AnonymousSignupSetup(), enabled: supportsAnonymousSignIn, section: .singleSignOn)
    }

    /// Subscribes to details the storage provider delivers later.
    public func configure() {
        let updates = externalStorage.updatedDetails
        updatesTask = Task { [weak self] in
            for await update in updates {
                await self?.handleExternalUpdate(update)
            }
        }
    }

    private var externallyStoredKeys: [any AccountKey.Type] {
        AccountConfiguration.externallyStoredKeys(service: configuration, values: account.configuration)
    }

    private func isSupported(_ key: any AccountKey.Type) -> Bool {
        configuration.supportedKeys.canStore(key)
    }

    private func handleExternalUpdate(_ update: ExternalAccountStorage.ExternallyStoredDetails) async {
        guard let current = account.details, current.accountId == update.accountId else {
            if signingIn?.accountId == update.accountId { signingIn?.update = update }
            return
        }
        var details = current.merging(update.details, allowOverwrite: true)
        details.isIncomplete = false
        try? await account.supplyUserDetails(details)
    }

    /// Logs in with a user id and password.
    ///
    /// - Parameters:
    ///   - userId: the user id the account signed up with.
    ///   - password: its password.
    /// - Throws: AccountServiceError/wrongCredentials.
    public func login(userId: String, password: String) async throws {
        guard let (accountId, record) = records.first(where: { $0.value.userId == userId }), record.password == password else {
            throw AccountServiceError.wrongCredentials
        }
        signingIn = (accountId, nil)
        defer { signingIn = nil }
        let external = try await externalStorage.retrieveExternalStorage(for: accountId, externallyStoredKeys)
        try await account.supplyUserDetails(record.details.merging(external))
        // A provider that answered "not yet" may have delivered the values before the account was
        // signed in (its fetch raced the login).
        if let update = signingIn?.update { await handleExternalUpdate(update) }
    }

    /// Creates an account (or upgrades the signed-in anonymous account, keeping its accountId).
    /// Omitted required keys with a `.default` initial value get it.
    ///
    /// As upstream's in-memory service does, signup while a non-anonymous account is signed in is
    /// refused (log out first): one signup never reports events of two accounts.
    ///
    /// - Parameter signupDetails: the new account's values, with its user id and password; values the
    ///   service does not store go to the storage provider.
    /// - Throws: AccountOperationError when validation fails, AccountServiceError/credentialsTaken,
    ///   AccountServiceError/internalError while a non-anonymous account is signed in.
    public func signup(_ signupDetails: AccountDetails) async throws {
        if let current = account.details, !current.isAnonymous {
            throw AccountServiceError.internalError
        }
        let signupDetails = AccountValidation.applyingInitialValues(to: signupDetails, values: account.configuration, service: configuration)
        try AccountValidation.validateSignup(signupDetails, values: account.configuration, service: configuration)
        guard let userId = signupDetails[AccountDetails.__Key_userId.self], let password = signupDetails.password else {
            throw AccountOperationError.missingAccountValue([AccountDetails.__Key_userId.name, AccountDetails.__Key_password.name])
        }
        guard !records.values.contains(where: { $0.userId == userId }) else {
            throw AccountServiceError.credentialsTaken
        }
        // External storage refuses non-mutable keys: refuse them before anything is written.
        let nonMutable = signupDetails.removing(Self.supportedKeys).keys.filter { !$0.options.contains(.mutable) }
        if !nonMutable.isEmpty {
            throw AccountOperationError.mutatingNonMutableAccountKeys(nonMutable.map { $0.identifier })
        }
        let current = account.details
        let upgrading = current?.isAnonymous == true
        let accountId = upgrading ? (current?.accountId ?? UUID().uuidString) : UUID().uuidString

        var stored = signupDetails.filtered(to: Self.supportedKeys)
        stored.remove(AccountDetails.__Key_password.self)
        stored.accountId = accountId
        stored.isNewUser = false
        records[accountId] = Record(userId: userId, password: password, details: stored)

        let external = signupDetails.removing(Self.supportedKeys)
        try await externalStorage.requestExternalStorage(of: external, for: accountId)

        var details = stored.merging(external.filtered(to: external.keys))
        details.isNewUser = true
        details.isAnonymous = false
        try await account.supplyUserDetails(details)
    }

    /// Signs in with a new anonymous account (marked anonymous and new).
    ///
    /// - Throws: nothing in practice: the new details always hold an account id.
    public func signInAnonymously() async throws {
        let accountId = UUID().uuidString
        var details = AccountDetails()
        details.accountId = accountId
        records[accountId] = Record(userId: nil, password: nil, details: details)
        details.isAnonymous = true
        details.isNewUser = true
        try await account.supplyUserDetails(details)
    }

    /// Requests a password reset; the in-memory service does nothing.
    ///
    /// - Parameter userId: the user id (ignored).
    /// - Throws: never.
    public func resetPassword(userId: String) async throws {}

    /// Validates and applies `modifications` to the signed-in account; keys the service does not store go to the storage provider.
    ///
    /// - Parameter modifications: the values to set and to remove.
    /// - Throws: `AccountServiceError.notSignedIn` without a signed-in account,
    ///   ``AccountOperationError`` when validation refuses the change,
    ///   `AccountServiceError.credentialsTaken` for a user id of another account, the refusal of the
    ///   step-up re-authentication hook (user id and password changes), or the storage provider's
    ///   error for the values it keeps.
    public func updateAccountDetails(_ modifications: AccountModifications) async throws {
        guard let current = account.details, var record = records[current.accountId] else {
            throw AccountServiceError.notSignedIn
        }
        try AccountValidation.validateModifications(modifications, values: account.configuration, service: configuration)
        let userIdKey = AccountDetails.__Key_userId.self
        if modifications.touches(userIdKey) {
            try await securityModifier.ensureAuthenticated(for: .changeUserId)
            if let newUserId = modifications.modifiedDetails[userIdKey],
                records.contains(where: { $0.key != current.accountId && $0.value.userId == newUserId })
            {
                throw AccountServiceError.credentialsTaken
            }
        }
        if modifications.touches(AccountDetails.__Key_password.self) {
            try await securityModifier.ensureAuthenticated(for: .changePassword)
        }

        let externalKeys = (modifications.modifiedKeys + modifications.removedKeys).filter { !isSupported($0) }
        try await externalStorage.updateExternalStorage(with: modifications.filtered(to: externalKeys), for: current.accountId)

        let local = modifications.filtered(to: Self.supportedKeys)
        if let password = local.modifiedDetails.password {
            record.password = password
        }
        if let userId = local.modifiedDetails[userIdKey] {
            record.userId = userId
        }
        var details = local.applied(to: record.details)
        details.remove(AccountDetails.__Key_password.self)
        record.details = details
        records[current.accountId] = record

        var updated = modifications.applied(to: current)
        updated.isNewUser = false
        try await account.supplyUserDetails(updated)
    }

    /// Signs the current account out.
    ///
    /// - Throws: never.
    public func logout() async throws {
        await account.removeUserDetails()
    }

    /// Deletes the signed-in account: step-up re-authentication, `deletingAccount`, removal of the
    /// records, then `removeUserDetails()` (which reports `disassociatingAccount`). With nobody
    /// signed in it returns without doing anything, as upstream.
    ///
    /// - Throws: the refusal of the step-up re-authentication hook, or the storage provider's error
    ///   when it cannot delete the account's values (the account then stays).
    public func delete() async throws {
        guard let details = account.details else {
            return
        }
        try await securityModifier.ensureAuthenticated(for: .deleteAccount)
        try await notifications.reportEvent(.deletingAccount(details.accountId))
        records[details.accountId] = nil
        await account.removeUserDetails()
    }

    /// The number of stored accounts (for inspection).
    public var accountCount: Int {
        records.count
    }
}

extension AccountServiceConfiguration {
    /// The configuration with additional validation rules (overriding the defaults for their keys).
    ///
    /// - Parameter rules: the rules to add; a key's rules replace the ones configured for it.
    /// - Returns: the same configuration with these rules, or this one when `rules` is empty.
    public func adding(_ rules: [FieldValidationRules]) -> AccountServiceConfiguration {
        guard !rules.isEmpty else {
            return self
        }
        return AccountServiceConfiguration(
            supportedKeys: supportedKeys, userIdConfiguration: userIdConfiguration, requiredAccountKeys: requiredAccountKeys, rules: rules)
    }
}
