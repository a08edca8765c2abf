//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Logging
import Spezi
import SpeziAccount

/// An `AccountService` on the event log: configured like `InMemoryAccountService`, but every
/// signup, change, deletion and login outcome is an event in an ``AccountStore``'s log, and the
/// details it supplies to `Account` come from the store's details cache (read-your-writes: when an
/// operation returns, `Account.details` and the cache already show it).
///
/// ```swift
/// Configuration {
///     AccountConfiguration(
///         service: try await EventSourcedAccountService(directory: "/var/lib/accounts"),
///         configuration: [.requires(\.userId), .requires(\.name), .collects(\.dateOfBirth)]
///     )
/// }
/// ```
///
/// By default it stores any key (`.arbitrary`), so no storage provider is needed. With
/// `supportedKeys: .exactly(...)`, the other configured keys go to the configured
/// `AccountStorageProvider` (``EventSourcedStorageProvider`` keeps them in the same log).
///
/// Every operation validates first (required keys, `FieldValidationRules`, supported keys) against
/// the app's `AccountValueConfiguration`; a rejected operation appends nothing.
public actor EventSourcedAccountService: UserIdPasswordAccountService {
    /// What the service supports: its user id type, the keys it stores and its required keys.
    public nonisolated let configuration: AccountServiceConfiguration
    /// The store underneath (also readable directly: history, rebuilds, verification).
    public nonisolated let store: AccountStore
    /// Recorded as the actor of the events this service appends.
    private let actorName: String

    @Dependency(Account.self) private var account
    @Dependency(AccountNotifications.self) private var notifications
    @Dependency(ExternalAccountStorage.self) private var externalStorage

    @IdentityProvider(section: .primary) private var userIdPassword = UserIdPasswordSetup()
    @IdentityProvider private var anonymousSignup: AnonymousSignupSetup
    @SecurityRelatedModifier private var securityModifier: any SecurityRelatedAuthentication

    private var updatesTask: Task<Void, Never>?
    /// Follows the log for changes other processes make to the signed-in account.
    private var followTask: Task<Void, Never>?
    /// The correlation ids of this service's own recent commands: their records are not news.
    private var ownCorrelations: [String] = []

    /// A service on an open store.
    ///
    /// - Parameters:
    ///   - store: the store (its own validation configuration is not used: the service validates
    ///     against the app's configuration).
    ///   - supportedKeys: the keys kept in the store; `.exactly` sends the others to the storage provider.
    ///   - userIdType: the kind of user id.
    ///   - supportsAnonymousSignIn: whether anonymous sign-in is offered as a setup option.
    ///   - security: the step-up re-authentication hook that delete and credential changes pass.
    ///   - validationRules: validation rules overriding the defaults.
    ///   - actorName: written as the actor of every event (e.g. the server's name).
    public init(
        store: AccountStore,
        supportedKeys: SupportedAccountKeys = .arbitrary,
        userIdType: UserIdConfiguration = .emailAddress,
        supportsAnonymousSignIn: Bool = false,
        security: any SecurityRelatedAuthentication = AlwaysAuthenticated(),
        validationRules: [FieldValidationRules] = [],
        actorName: String = "account-service"
    ) {
        self.store = store
        self.actorName = actorName
        self.configuration = AccountServiceConfiguration(supportedKeys: supportedKeys) {
            userIdType
            RequiredAccountKeys {
                \.userId
                \.password
            }
        }.adding(validationRules)
        self._securityModifier = SecurityRelatedModifier(wrappedValue: security)
        self._anonymousSignup = IdentityProvider(wrappedValue: AnonymousSignupSetup(), enabled: supportsAnonymousSignIn, section: .singleSignOn)
    }

    /// A service on a store it opens in `directory` (created when missing).
    ///
    /// - Parameters:
    ///   - directory: The store's folder, created when missing.
    ///   - supportedKeys: The keys kept in the store; `.exactly` sends the others to the storage
    ///     provider.
    ///   - userIdType: The kind of user id.
    ///   - supportsAnonymousSignIn: Whether anonymous sign-in is offered as a setup option.
    ///   - options: The store's options: the log's location, hashing, throttling and the rest.
    /// - Throws: What opening the store throws: ``AccountStoreError`` for a store that cannot be opened
    ///   (a key vault that does not belong to its log, a log location this build cannot reach), or a
    ///   storage error.
    public init(
        directory: String,
        supportedKeys: SupportedAccountKeys = .arbitrary,
        userIdType: UserIdConfiguration = .emailAddress,
        supportsAnonymousSignIn: Bool = false,
        options: AccountStoreOptions = AccountStoreOptions()
    ) async throws {
        let store = try await AccountStore(directory: directory, options: options)
        self.init(store: store, supportedKeys: supportedKeys, userIdType: userIdType, supportsAnonymousSignIn: supportsAnonymousSignIn)
    }

    /// Subscribes to details the storage provider delivers later.
    ///
    /// - Throws: The log's `EventLogError` when its last position cannot be read; the service then
    ///   does not follow changes made elsewhere.
    public func configure() async throws {
        let updates = externalStorage.updatedDetails
        updatesTask = Task { [weak self] in
            for await update in updates {
                await self?.handleExternalUpdate(update)
            }
        }
        // Changes made elsewhere (another app server, `accountctl`, an import) reach the signed-in
        // account: from the log, in log order, after what the log held at boot.
        let head = try await store.log.lastPosition()
        let log = store.log
        followTask = Task { [weak self] in
            do {
                for try await record in log.subscribeRecords(after: head, stream: nil, batchSize: 256) {
                    guard let self else { return }
                    await self.handleLogged(record)
                }
            } catch {
                if !Task.isCancelled {
                    Self.logger.error("stopped following the log for changes made elsewhere", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    private static let logger = Logger(label: "SpeziAccountStore.service")

    /// A new correlation id for one command, remembered so that the command's own records are
    /// not taken for changes made elsewhere.
    private var context: AccountStore.Context {
        let id = UUID.random().uuidString.lowercased()
        ownCorrelations.append(id)
        if ownCorrelations.count > 4_096 { ownCorrelations.removeFirst(ownCorrelations.count - 4_096) }
        return AccountStore.Context(actor: actorName, correlationID: id)
    }

    /// A record another process appended to the signed-in account: its details are supplied anew
    /// (`detailsChanged`), or, for a deletion, `deletingAccount` and then the disassociation.
    private func handleLogged(_ record: RecordedEvent) async {
        guard let current = account.details, record.streamID == current.accountId else { return }
        if let correlation = record.metadata.correlationID, ownCorrelations.contains(correlation) { return }
        do {
            switch record.type {
            case "account.deleted":
                try await notifications.reportEvent(.deletingAccount(current.accountId))
                await account.removeUserDetails()
            case "account.details-modified", "account.userid-changed", "account.anonymous-upgraded":
                try await store.awaitCache(record.position)
                guard let stored = try store.details(of: current.accountId), account.details?.accountId == current.accountId else { return }
                var details = try await sessionDetails(stored)
                details.isNewUser = false
                details.isIncomplete = current.isIncomplete
                try await account.supplyUserDetails(details)
            default:
                break
            }
        } catch {
            Self.logger.error(
                "could not apply a change made elsewhere to the signed-in account",
                metadata: ["account": "\(current.accountId)", "position": "\(record.position)", "error": "\(error)"])
        }
    }

    private var externallyStoredKeys: [any AccountKey.Type] {
        AccountConfiguration.externallyStoredKeys(service: configuration, values: account.configuration)
    }

    private func isStored(_ key: any AccountKey.Type) -> Bool {
        configuration.supportedKeys.canStore(key)
    }

    /// Splits details into what the store keeps and what goes to the storage provider.
    private func split(_ details: AccountDetails) -> (stored: AccountDetails, external: AccountDetails) {
        guard case .exactly = configuration.supportedKeys else { return (details, AccountDetails()) }
        let external = details.keys.filter { !isStored($0) }
        var externalDetails = details.filtered(to: external)
        externalDetails.isNewUser = false
        return (details.removing(external), externalDetails)
    }

    private func handleExternalUpdate(_ update: ExternalAccountStorage.ExternallyStoredDetails) async {
        guard let current = account.details, current.accountId == update.accountId else { return }
        var details = current.merging(update.details, allowOverwrite: true)
        details.isIncomplete = false
        try? await account.supplyUserDetails(details)
    }

    /// The details of the account as the app sees them: the cache's plus the storage provider's.
    private func sessionDetails(_ stored: AccountDetails) async throws -> AccountDetails {
        let external = try await externalStorage.retrieveExternalStorage(for: stored.accountId, externallyStoredKeys)
        return stored.merging(external)
    }

    /// Logs in with a user id and password. The outcome is recorded in the log either way.
    ///
    /// - Parameters:
    ///   - userId: The user id as entered, in any spelling that normalizes to the account's.
    ///   - password: The password in the clear.
    /// - Throws: `AccountServiceError.wrongCredentials`, ``AccountStoreError/lockedOut(until:)``.
    public func login(userId: String, password: String) async throws {
        try await login(userId: userId, password: password, secondFactor: nil)
    }

    /// Logs in an account that has a TOTP second factor: the password and a current code (or a
    /// recovery code, which is then used up).
    ///
    /// - Parameters:
    ///   - userId: The account's user id.
    ///   - password: Its password.
    ///   - secondFactor: A TOTP code or a recovery code; nil for an account without a second factor.
    /// - Throws: As ``login(userId:password:)``; with the right password,
    ///   ``AccountStoreError/secondFactorRequired`` without a code and
    ///   ``AccountStoreError/invalidSecondFactor`` for a wrong or used one.
    public func login(userId: String, password: String, secondFactor: String?) async throws {
        let stored = try await store.login(userId: userId, password: password, secondFactor: secondFactor, context: context)
        try await account.supplyUserDetails(try await sessionDetails(stored))
    }

    /// Creates an account (or upgrades the signed-in anonymous account, keeping its account id).
    /// Omitted required keys take their `.default` initial value, as upstream's services do.
    ///
    /// - Parameter signupDetails: The new account's details, with its user id and password; keys the
    ///   store does not keep go to the storage provider.
    /// - Throws: `AccountOperationError` when validation fails (also for external keys that are
    ///   not mutable, before anything is written), `AccountServiceError.credentialsTaken`, and
    ///   `AccountServiceError.internalError` while a non-anonymous account is signed in (as
    ///   upstream: a signup never mixes two accounts in one session).
    public func signup(_ signupDetails: AccountDetails) async throws {
        if let current = account.details, !current.isAnonymous { throw AccountServiceError.internalError }
        let signupDetails = AccountValidation.applyingInitialValues(to: signupDetails, values: account.configuration, service: configuration)
        try AccountValidation.validateSignup(signupDetails, values: account.configuration, service: configuration)
        let (local, external) = split(signupDetails)
        if !external.isEmpty && externalStorage.provider == nil {
            throw AccountConfigurationError.noStorageProviderConfigured
        }
        // External storage refuses keys that are not mutable: refused before the account exists.
        let nonMutable = external.keys.filter { !$0.options.contains(.mutable) }
        if !nonMutable.isEmpty { throw AccountOperationError.mutatingNonMutableAccountKeys(nonMutable.map { $0.identifier }) }
        let stored: AccountDetails
        if let current = account.details, current.isAnonymous {
            stored = try await store.upgrade(current.accountId, with: local, context: context, validating: false)
        } else {
            stored = try await store.signup(local, context: context, validating: false)
        }
        try await externalStorage.requestExternalStorage(of: external, for: stored.accountId)
        var details = stored.merging(external)
        details.isNewUser = true
        details.isAnonymous = false
        try await account.supplyUserDetails(details)
    }

    /// Signs in with a new anonymous account (marked anonymous and new).
    ///
    /// - Throws: ``AccountStoreError`` or the log's error when the account cannot be appended, or the
    ///   error of supplying the details to `Account`.
    public func signInAnonymously() async throws {
        let details = try await store.signInAnonymously(context: context)
        try await account.supplyUserDetails(details)
    }

    /// Requests a password reset: the store logs a single-use token's hash and hands the token to
    /// `AccountStoreOptions.passwordResetDelivery` (see `AccountStore.requestPasswordReset`). The
    /// answer is the same whether the user id has an account or not, so that it cannot be used to
    /// probe for accounts; the owner completes the reset with
    /// `AccountStore.completePasswordReset(userId:token:newPassword:context:)`.
    ///
    /// - Parameter userId: The user id whose password is to be reset.
    /// - Throws: A storage failure only; an unknown user id is not an error.
    public func resetPassword(userId: String) async throws {
        try await store.requestPasswordReset(userId: userId, context: context)
    }

    /// Changes the signed-in account's details (values, user id, password). Credential changes pass
    /// the step-up hook first.
    ///
    /// - Parameter modifications: The values to set and the keys to remove.
    /// - Throws: `AccountServiceError.notSignedIn` with nobody signed in; `AccountOperationError` when
    ///   validation fails; the step-up hook's error for a refused credential change;
    ///   `AccountServiceError.credentialsTaken` for a user id of another account;
    ///   ``AccountStoreError`` when the store refuses or cannot write the change; or the storage
    ///   provider's error for external keys.
    public func updateAccountDetails(_ modifications: AccountModifications) async throws {
        guard let current = account.details else { throw AccountServiceError.notSignedIn }
        try AccountValidation.validateModifications(modifications, values: account.configuration, service: configuration)
        if modifications.touches(AccountDetails.__Key_userId.self) {
            try await securityModifier.ensureAuthenticated(for: .changeUserId)
        }
        if modifications.touches(AccountDetails.__Key_password.self) {
            try await securityModifier.ensureAuthenticated(for: .changePassword)
        }
        let touched = modifications.modifiedKeys + modifications.removedKeys
        let local = modifications.filtered(to: touched.filter(isStored))
        let external = modifications.filtered(to: touched.filter { !isStored($0) })
        let (currentStored, currentExternal) = split(current)
        let stored =
            local.isEmpty
            ? currentStored
            : try await store.modify(current.accountId, local, context: context, validating: false)
        try await externalStorage.updateExternalStorage(with: external, for: current.accountId)
        var updated = stored.merging(external.applied(to: currentExternal))
        updated.isNewUser = false
        updated.isIncomplete = current.isIncomplete
        try await account.supplyUserDetails(updated)
    }

    /// Records the logout in the log, then disassociates the account.
    ///
    /// - Throws: ``AccountStoreError`` or a storage failure when the logout cannot be recorded; the
    ///   account stays signed in then.
    public func logout() async throws {
        if let current = account.details, !current.isAnonymous {
            try await store.logout(current.accountId, context: context)
        }
        await account.removeUserDetails()
    }

    /// Deletes the signed-in account: step-up re-authentication, `deletingAccount` (the storage
    /// provider's error aborts here, before anything is appended), `account.deleted` in the log,
    /// then `removeUserDetails()` (which reports `disassociatingAccount`).
    ///
    /// With nobody signed in there is nothing to delete: it returns, as upstream's services do.
    ///
    /// - Throws: The step-up hook's error when re-authentication is refused; the storage provider's
    ///   error from `deletingAccount`; ``AccountStoreError`` or a storage failure when the deletion
    ///   cannot be appended. In each case the account is not deleted.
    public func delete() async throws {
        guard let details = account.details else { return }
        try await securityModifier.ensureAuthenticated(for: .deleteAccount)
        try await notifications.reportEvent(.deletingAccount(details.accountId))
        try await store.delete(details.accountId, context: context)
        await account.removeUserDetails()
    }
}

extension EventSourcedAccountService: LifecycleHandler {
    /// The runtime stops: the service stops following the store and closes it (every acknowledged
    /// append is already durable; queued ones are finished first).
    public func applicationWillTerminate() async {
        updatesTask?.cancel()
        updatesTask = nil
        followTask?.cancel()
        followTask = nil
        await store.close()
    }
}
