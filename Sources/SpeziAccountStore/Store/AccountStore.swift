//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation
import Logging
import Projections
import SpeziAccount
import Synchronization

/// The event-sourced account store: commands validate, then append typed events to the log; reads
/// come from projections replayed from that log.
///
/// One directory holds it all: `log/` (the event log, see FORMAT.md; or a log elsewhere, see
/// ``AccountStoreOptions/logLocation``) and `projections/` (the details cache and other read models,
/// rebuildable from the log at any time). The store reaches its log only through the
/// `EventLogBackend` protocol.
public final class AccountStore: Sendable {
    /// The folder of the store.
    public let directory: String
    /// The event log, whichever backend keeps it. Package access: every change goes through the
    /// store's commands and their checks; ``logReader`` reads it.
    package let log: any EventLogBackend
    /// The account view of the log (package access, like ``log``).
    package let accounts: AccountLog
    /// The read models (package access: ``projectionStatus()``,
    /// ``rebuildProjection(_:progress:)`` and ``waitUntilApplied(_:position:)`` are the public
    /// doors).
    package let projections: ProjectionStore
    /// What the service stores and requires.
    public let serviceConfiguration: AccountServiceConfiguration
    /// What the app asks for.
    public let valueConfiguration: AccountValueConfiguration
    /// The keys values are decoded with.
    public let registry: AccountKeyRegistry
    let options: AccountStoreOptions
    let hasher: PasswordHasher
    /// The states of the accounts used last, the starting point of commands and session checks.
    let recentStates: RecentStates
    static let logger = Logger(label: "SpeziAccountStore")
    /// Held shared while the store is open (a migration needs the folder alone).
    let lock: StoreLock
    /// A hash of nothing in particular, checked against for unknown user ids (one derivation, like a
    /// real check); made on first need, not at start-up.
    private let decoyHash = Mutex<String?>(nil)
    /// The key idempotency keys are derived under, once read (see `AccountStore+Idempotency`).
    let idempotencySecretCache = Mutex<SymmetricKey?>(nil)
    /// Counts ``verifyPassword(_:against:)`` calls (``passwordChecks``).
    let passwordVerifications = Atomic<Int>(0)
    /// The log's length when skeleton claims began (see ``skeletonClaimsFrom(_:)``).
    let skeletonClaimsFrom: UInt64
    /// Counts password checks per user id and client before they are made.
    let throttle: LoginThrottle
    /// Bounds the password derivations waiting for the hashing threads.
    let hashing: HashingAdmission
    /// Appends made after their callers were answered; close waits for them.
    let backgroundWrites = BackgroundWrites()

    /// The service configuration used when none is given: any key, email user ids, user id and password required.
    public static let defaultServiceConfiguration = AccountServiceConfiguration(supportedKeys: .arbitrary) {
        UserIdConfiguration.emailAddress
        RequiredAccountKeys {
            \.userId
            \.password
        }
    }

    /// Opens (or creates) the store in `directory`, with its log where `options.logLocation` says
    /// (by default in the store's own folder).
    ///
    /// - Parameters:
    ///   - directory: the store's folder (its projections, its vault beside an LMDB log, its lock).
    ///   - service: what the service stores and requires.
    ///   - values: the keys the app asks for.
    ///   - options: the log's location and durability, hashing, throttling and the rest.
    /// - Throws: ``AccountStoreError`` for a store that cannot be opened (a vault that does not
    ///   belong to its log, a location that cannot be reached), or a storage error.
    public convenience init(
        directory: String, service: AccountServiceConfiguration = AccountStore.defaultServiceConfiguration,
        values: AccountValueConfiguration = .default, options: AccountStoreOptions = AccountStoreOptions()
    ) async throws {
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        let lock = try StoreLock(directory: root.path, exclusive: false)
        let log: any EventLogBackend
        do {
            log = try await LogLocation(options.logLocation, storeFolder: root).open(sync: options.sync, clock: options.clock)
        } catch {
            lock.release()
            throw error
        }
        try await self.init(root: root, lock: lock, log: log, service: service, values: values, options: options)
    }

    /// Opens (or creates) the store in `directory` on a log backend the caller opened (the LMDB
    /// `EventLog`, a `PostgresEventLog`, or a backend of your own that passes the conformance
    /// kit). The store owns the backend from here on and closes it in ``close()``, also when this
    /// initializer throws. `options.logLocation`, `sync` and `clock` are the backend's business
    /// and not used.
    ///
    /// - Parameters:
    ///   - directory: the store's folder (its projections, its vault beside a log that keeps no
    ///     vault of its own, its lock).
    ///   - log: the opened backend.
    ///   - service: what the service stores and requires.
    ///   - values: the keys the app asks for.
    ///   - options: hashing, throttling, projections and the rest.
    /// - Throws: ``AccountStoreError`` for a vault that does not belong to the log, or a storage
    ///   error.
    public convenience init(
        directory: String, log: some EventLogBackend, service: AccountServiceConfiguration = AccountStore.defaultServiceConfiguration,
        values: AccountValueConfiguration = .default, options: AccountStoreOptions = AccountStoreOptions()
    ) async throws {
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        let lock: StoreLock
        do {
            lock = try StoreLock(directory: root.path, exclusive: false)
        } catch {
            await log.close()
            throw error
        }
        try await self.init(root: root, lock: lock, log: log, service: service, values: values, options: options)
    }

    private init(
        root: URL, lock: StoreLock, log: any EventLogBackend, service: AccountServiceConfiguration, values: AccountValueConfiguration,
        options: AccountStoreOptions
    ) async throws {
        self.lock = lock
        let vault: KeyVault?
        let accounts: AccountLog
        do {
            hasher = try PasswordHasher(
                algorithm: options.passwordHashing, allowingWeakParameters: options.allowWeakPasswordParameters,
                firebase: options.firebaseHashParameters)
            vault = try await StoreKeyingCheck.openVault(
                for: log, vaultPath: root.appendingPathComponent("keys/vault").path, wantsVault: options.cryptoShredding)
            accounts = AccountLog(log: log, evolution: options.evolution, vault: vault)
            // A deletion cut short by a crash: destroy the key if the deletion reached the log.
            if let vault {
                var deletions: [String: Bool] = [:]
                for accountId in try await vault.offPool({ try $0.pendingShreds() }) {
                    deletions[accountId] = try await accounts.load(accountId)?.isDeleted ?? true
                }
                let settled = deletions
                _ = try await vault.offPool { try $0.finishShredding(settled) }
            }
            skeletonClaimsFrom = try await Self.skeletonClaimsFrom(log)
            projections = try ProjectionStore(
                path: root.appendingPathComponent("projections").path, log: log,
                projections: [
                    AccountDetailsProjection(evolution: options.evolution, vault: vault),
                    ExternalDetailsProjection(evolution: options.evolution, vault: vault),
                    LookAlikeProjection(
                        claimsFrom: skeletonClaimsFrom, evolution: options.evolution, vault: vault,
                        skeletonClaims: { [accounts] in accounts.skeletonClaims(forUserId: $0) }),
                    ProviderTokenProjection(evolution: options.evolution, vault: vault),
                    WebhookProjection()
                ] + options.additionalProjections, options: options.projections)
        } catch {
            await log.close()
            lock.release()
            throw error
        }
        self.directory = root.path
        self.log = log
        self.accounts = accounts
        self.serviceConfiguration = service
        self.valueConfiguration = values
        self.registry = AccountKeyRegistry.builtIn.merging(AccountKeyRegistry(values.keys + options.additionalKeys))
        self.options = options
        self.recentStates = RecentStates(capacity: options.recentStates)
        self.throttle = LoginThrottle(policy: options.loginThrottling)
        self.hashing = HashingAdmission(limit: options.maxQueuedPasswordChecks ?? .max)
    }

    /// Stops the projections and closes the files.
    public func close() async {
        await backgroundWrites.settle()
        await projections.close()
        await log.close()
        accounts.vault?.release()
        lock.release()
    }

    /// The time by the store's clock (``AccountStoreOptions/clock``), which stamps its records.
    ///
    /// - Returns: What the configured clock says now.
    public func now() -> Date {
        options.clock()
    }

    // MARK: Reading

    /// The account's current details from the details cache (never the password), or nil.
    ///
    /// - Parameter accountId: The account to read.
    /// - Returns: The details, or nil for an unknown or deleted account.
    /// - Throws: `ProjectionError` when the cache is closed, an error reading or decoding the cached
    ///   state (``PayloadDecodingError``, ``KeyVaultError``), or one turning its values into typed
    ///   details.
    public func details(of accountId: String) throws -> AccountDetails? {
        guard let state = try cachedState(of: accountId), !state.isDeleted else { return nil }
        return try details(from: state)
    }

    /// The account's state in the details cache (deleted accounts included), or nil.
    ///
    /// - Parameter accountId: The account to read.
    /// - Returns: The cached state, or nil when the cache has no entry for it.
    /// - Throws: `ProjectionError` when the cache is closed, or an error reading or decoding the state
    ///   (``PayloadDecodingError``, ``KeyVaultError``).
    public func cachedState(of accountId: String) throws -> AccountState? {
        try AccountDetailsProjection.state(of: accountId, in: projections, vault: accounts.vault)
    }

    /// Calls `body` with every account's cached state, in account-id order.
    ///
    /// - Parameter body: Called with each state, deleted accounts included.
    /// - Throws: What `body` throws, which ends the iteration; `ProjectionError` when the cache is
    ///   closed; or an error reading or decoding a state.
    public func forEachCachedAccount(_ body: (AccountState) throws -> Void) throws {
        try AccountDetailsProjection.forEachAccount(in: projections, vault: accounts.vault, body)
    }

    /// The values the storage provider keeps for the account (the external-details view).
    ///
    /// - Parameter accountId: The account to read.
    /// - Returns: The encoded values by key identifier; empty when none are stored.
    /// - Throws: `ProjectionError` when the view is closed, or an error reading or decoding the
    ///   stored values.
    public func externalValues(of accountId: String) throws -> EncodedAccountValues {
        try ExternalDetailsProjection.values(of: accountId, in: projections, vault: accounts.vault)
    }

    /// The account id for an account id or a user id (case-insensitive), or nil.
    ///
    /// - Parameter accountOrUserId: A live account's id, or a user id in any spelling.
    /// - Returns: The account id, or nil when neither a live account nor a user-id claim matches.
    /// - Throws: An error reading the details cache, or the log's `EventLogError` when the user id's
    ///   claim cannot be looked up.
    public func resolve(_ accountOrUserId: String) async throws -> String? {
        if let state = try cachedState(of: accountOrUserId), !state.isDeleted {
            return state.accountId
        }
        return try await accounts.accountId(forUserId: accountOrUserId)
    }

    /// Turns a folded state into `AccountDetails` (typed where the registry knows the key, kept as
    /// unknown values otherwise).
    ///
    /// - Parameter state: A state from the log or the cache.
    /// - Returns: The details with the account id, user id, anonymity and the service's user id type
    ///   set.
    /// - Throws: An error when a stored value cannot be decoded as the type its key declares.
    public func details(from state: AccountState) throws -> AccountDetails {
        var details = try AccountDetails(perKey: state.values, registry: registry)
        details.accountId = state.accountId
        if !state.userId.isEmpty {
            details[AccountDetails.__Key_userId.self] = state.userId
        }
        details.isAnonymous = state.isAnonymous
        details.userIdType = serviceConfiguration.userIdConfiguration.idType
        return details
    }

    /// Returns once the details cache, the external view and the additional projections
    /// (``AccountStoreOptions/additionalProjections``) have applied everything the log held when
    /// this was called: for a node that just opened a shared log, or a tool that reads at once.
    ///
    /// - Throws: The log's `EventLogError` when its last position cannot be read, or `ProjectionError`
    ///   when a projection has failed, is closed or does not catch up in time.
    public func waitUntilCaughtUp() async throws {
        let head = try await log.lastPosition()
        try await projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: head)
        try await projections.waitUntilApplied(ExternalDetailsProjection.projectionName, position: head)
        for projection in options.additionalProjections {
            try await projections.waitUntilApplied(projection.name, position: head)
        }
    }

    /// Waits until the details cache has applied `position`: what an operation returns, every read shows.
    /// Waits until the details cache has applied `position`, which a command has just committed.
    /// When it cannot say so in time (its projection is stalled, say by a key vault that is
    /// briefly unreachable, or has stopped) the command still happened: this throws
    /// ``AccountStoreError/committedNotApplied(position:reason:)``, never a failure.
    func awaitCache(_ position: UInt64) async throws {
        do {
            try await projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: position)
        } catch let error as ProjectionError {
            Self.logger.warning(
                "a committed command is answered before the details cache has it", metadata: ["position": "\(position)", "reason": "\(error)"])
            throw AccountStoreError.committedNotApplied(position: position, reason: error.description)
        }
    }

    /// Whether the details cache has applied the log up to `position` (a position that
    /// ``AccountStoreError/committedNotApplied(position:reason:)`` named, for instance).
    ///
    /// - Parameter position: A log position.
    /// - Returns: True when the cache's checkpoint is at `position` or beyond.
    /// - Throws: The log's `EventLogError` when its last position cannot be read.
    public func hasApplied(_ position: UInt64) async throws -> Bool {
        let status = try await projections.status().first { $0.name == AccountDetailsProjection.projectionName }
        return (status?.checkpoint ?? 0) >= position
    }

    /// Values to log for these details: every key but the account id, user id and password, which
    /// travel in the events' own fields (the password only as a hash). Checks the size limits.
    func loggedValues(_ details: AccountDetails) throws -> EncodedAccountValues {
        try checkLimits(details, keyCount: details.count + details.unknownValues.count)
        var values = try details.encodedPerKey()
        for identifier in [
            AccountDetails.__Key_accountId.identifier, AccountDetails.__Key_userId.identifier, AccountDetails.__Key_password.identifier
        ] {
            values[identifier] = nil
        }
        let limit = options.limits.maxValueBytes
        if let (identifier, value) = values.first(where: { $0.value.count > limit }) {
            throw AccountStoreError.valueTooLarge(key: identifier, bytes: value.count, limit: limit)
        }
        return values
    }

    /// Refuses too many keys, and user ids or passwords past their limits, before any work is done.
    func checkLimits(_ details: AccountDetails, keyCount: Int) throws {
        let limits = options.limits
        if keyCount > limits.maxKeys { throw AccountStoreError.tooManyKeys(count: keyCount, limit: limits.maxKeys) }
        if let userId = details[AccountDetails.__Key_userId.self], userId.utf8.count > limits.maxUserIdBytes {
            throw AccountStoreError.valueTooLarge(key: AccountDetails.__Key_userId.identifier, bytes: userId.utf8.count, limit: limits.maxUserIdBytes)
        }
        if let password = details.password, password.utf8.count > limits.maxPasswordBytes {
            throw AccountStoreError.valueTooLarge(
                key: AccountDetails.__Key_password.identifier, bytes: password.utf8.count, limit: limits.maxPasswordBytes)
        }
    }

    func timingDecoyHash() async throws -> String {
        if let hash = decoyHash.withLock({ $0 }) { return hash }
        let hash = try await hashPassword(UUID.random().uuidString)
        return decoyHash.withLock { stored in
            stored = stored ?? hash
            return stored!
        }
    }

    /// Hashes a password on the hashing threads, if the queue has room.
    func hashPassword(_ password: String) async throws -> String {
        try await hashing.run { try await hasher.hashOffPool(password) }
    }

    /// Checks a password on the hashing threads, if the queue has room.
    ///
    /// A hash imported from Firebase that cannot be checked (no Firebase parameters configured, or
    /// another project's) is logged as the operator's error and answered as a wrong password, so
    /// that a client cannot tell imported accounts from others.
    func verifyPassword(_ password: String, against stored: String) async throws -> Bool {
        passwordVerifications.add(1, ordering: .relaxed)
        do {
            return try await hashing.run { try await hasher.verifyOffPool(password, against: stored) }
        } catch let error as FirebaseHashError {
            Self.logger.error("a password imported from Firebase could not be checked", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// How many password checks (against a stored hash or the decoy) this store has started: what
    /// the timing defences are tested by, as work done rather than time taken.
    package var passwordChecks: Int { passwordVerifications.load(ordering: .relaxed) }

    /// Refuses keys the service does not store.
    func checkSupported(_ keys: [any AccountKey.Type]) throws {
        let unsupported = keys.filter { !serviceConfiguration.supportedKeys.canStore($0) }
        if !unsupported.isEmpty { throw AccountStoreError.unsupportedKeys(unsupported.map { $0.identifier }.sorted()) }
    }
}
