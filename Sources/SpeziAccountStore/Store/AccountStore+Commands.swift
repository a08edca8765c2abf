//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Logging
import Projections
import SpeziAccount

extension AccountStore {
    /// Who did it and in which request, recorded with every event.
    public struct Context: Sendable {
        /// Who runs the command (written into the events).
        public var actor: String?
        /// Ties the command's events to a request (written into the events).
        public var correlationID: String?
        /// Who asks, as the password checks are throttled: a client's address (or address group).
        /// Never written into the events. Nil: one client for all such commands.
        public var client: String?
        /// Makes a command repeatable (``KeyedCommand``): a retry with the same key (after an
        /// answer lost to a timeout or a crash) appends nothing and answers as the first attempt
        /// did, on any server sharing the log and vault. The key must stand for the whole request:
        /// a server derives it from the client's `Idempotency-Key` and the request's body, so that
        /// the same key with other content is another command. Never written into the events
        /// (their ids are derived from it under a secret).
        public var idempotencyKey: String?
        /// A known device of the user id being signed in to: the caller has checked that the
        /// client proved an earlier successful sign-in to this user id (an account server checks
        /// the device cookie it set then, OWASP's device cookies). Its password checks are counted
        /// apart from the crowd (``LoginThrottling``): guesses from elsewhere neither delay nor
        /// refuse them. Never written into the events. Nil: an unknown client.
        public var device: String?
        /// The client a session this command opens is opened from (its address and user agent):
        /// written, sealed, in `auth.session-client` beside the session's `auth.session-started`,
        /// so that the owner's session list can say where each came from. Nil: nothing is written.
        public var sessionClient: SessionClient?

        /// Creates a context.
        ///
        /// - Parameters:
        ///   - actor: Who runs the command, written into its events.
        ///   - correlationID: The request the command belongs to, written into its events.
        ///   - client: The client's address (or address group) that password checks are throttled by;
        ///     never written.
        ///   - idempotencyKey: The key that makes the command repeatable, or nil; never written.
        ///   - device: A known device of the user id signed in to (checked by the caller), or nil;
        ///     never written.
        public init(
            actor: String? = nil, correlationID: String? = nil, client: String? = nil, idempotencyKey: String? = nil, device: String? = nil
        ) {
            self.actor = actor
            self.correlationID = correlationID
            self.client = client
            self.idempotencyKey = idempotencyKey
            self.device = device
        }

        var metadata: EventMetadata { EventMetadata(actor: actor, correlationID: correlationID) }
    }

    /// Creates an account. Validates first (required keys, validation rules, supported keys), then
    /// appends one `account.created` event that claims the user id. Returns the details as the cache
    /// shows them (without the password).
    ///
    /// - Parameters:
    ///   - signupDetails: the new account's details, with its user id and password.
    ///   - context: who asks (actor, correlation id, client, idempotency key), recorded with the event.
    /// - Returns: the account's details as the cache shows them, marked as a new user.
    /// - Throws: `AccountOperationError` for invalid details, `AccountServiceError.credentialsTaken`
    ///   when the user id belongs to another account (also under concurrent signups).
    @discardableResult
    public func signup(_ signupDetails: AccountDetails, context: Context = Context()) async throws -> AccountDetails {
        try await signup(signupDetails, context: context, validating: true)
    }

    /// Signup; `validating: false` when the caller (the service) already validated the whole details
    /// against its own configuration and passes only the keys it stores.
    func signup(_ signupDetails: AccountDetails, context: Context, validating: Bool) async throws -> AccountDetails {
        try await StoreTracing.withSpan("account.signup") { span in
            let keyedId: String?
            if let userId = signupDetails[AccountDetails.__Key_userId.self] {
                keyedId = try await keyedAccountId(.signup, userId: userId, context: context)
            } else {
                keyedId = nil
            }
            let signup = try await prepareSignup(signupDetails, validating: validating, refusingTakenUserId: true, unlessHeldBy: keyedId)
            return try await create(
                keyedId ?? options.makeAccountId(), userId: signup.userId, passwordHash: signup.hash, values: signup.values, context: context)

        }
    }

    /// Checks the details of a signup or upgrade (limits, the rules unless the caller validated
    /// them, supported keys, user id and password present) and hashes the password, off the pool.
    /// With `refusingTakenUserId`, a user id that has an account already is refused before the
    /// hash is made (`credentialsTaken`), so that a taken id costs no derivation; the append still
    /// decides under concurrent signups.
    /// A keyed retry passes the account id it would create as `unlessHeldBy`: its own first
    /// attempt holding the user id is no refusal.
    func prepareSignup(
        _ signupDetails: AccountDetails, validating: Bool, refusingTakenUserId: Bool = false, unlessHeldBy retried: String? = nil
    ) async throws -> (userId: String, hash: String, values: EncodedAccountValues) {
        try checkLimits(signupDetails, keyCount: signupDetails.count + signupDetails.unknownValues.count)
        if validating {
            try AccountValidation.validateSignup(signupDetails, values: valueConfiguration, service: serviceConfiguration)
        }
        try checkSupported(signupDetails.keys)
        guard let userId = signupDetails[AccountDetails.__Key_userId.self], let password = signupDetails.password else {
            throw AccountOperationError.missingAccountValue([AccountDetails.__Key_userId.name, AccountDetails.__Key_password.name])
        }
        try Self.checkUserId(userId)
        let values = try loggedValues(signupDetails)
        if refusingTakenUserId, let holder = try await accounts.accountId(forUserId: userId), holder != retried {
            throw AccountServiceError.credentialsTaken
        }
        if refusingTakenUserId, let holder = try await lookAlikeHolder(ofUserId: userId, other: nil), holder != retried {
            throw AccountServiceError.credentialsTaken
        }
        let hash = try await hashPassword(password)
        return (userId, hash, values)
    }

    /// Appends the `account.created` of a signup whose password is hashed already, as the first
    /// event of `accountId`'s stream (`EventLogError.wrongExpectedVersion` when it has one).
    func create(
        _ accountId: String, userId: String, passwordHash hash: String, values: EncodedAccountValues, context: Context
    ) async throws
        -> AccountDetails
    {
        try Self.checkUserId(userId)
        if try await accounts.legacyHolder(ofUserId: userId, other: nil) != nil { throw AccountServiceError.credentialsTaken }
        if try await lookAlikeHolder(ofUserId: userId, other: accountId) != nil { throw AccountServiceError.credentialsTaken }
        let event = AccountEvent.accountCreated(userId: userId, passwordHash: hash, isAnonymous: false, values: values)
        let eventIDs = try await keyedEventIDs(.signup, accountId: accountId, context: context, count: 1)
        let position: UInt64
        do {
            if let first = eventIDs?.first, let committed = try await keyedPosition(of: first, in: accountId) {
                // A keyed retry of a signup that committed (the account may have changed since).
                position = committed
            } else {
                position = try await accounts.append(
                    [event], to: accountId, expectedVersion: .noStream, metadata: context.metadata,
                    claims: accounts.newClaims(forUserId: userId), releases: [], eventIDs: eventIDs
                ).positions.upperBound
            }
        } catch EventLogError.claimTaken {
            throw AccountServiceError.credentialsTaken
        } catch {
            position = try await committedFirstRecord(of: accountId, after: error)
        }
        try await awaitCache(position)
        // The details as of this signup: another writer may already have changed or deleted the
        // account, but this signup happened and its caller gets what it created.
        let created = AccountState(
            accountId: accountId, userId: userId, passwordHash: hash, isAnonymous: false, values: values,
            version: 1, at: options.clock())
        var details = try details(from: created)
        details.isNewUser = true
        return details
    }

    /// The position of the first record of the new stream `accountId` when an append that failed
    /// with `error` committed after all (its answer was lost to a crash of the log's server): the
    /// account id is new, so its stream exists only if that append committed. Asks the log a few
    /// times (it may be coming back); throws `error` when the stream is not there or the log does
    /// not answer, so that a command that committed is not answered as failed.
    func committedFirstRecord(of accountId: String, after error: any Error) async throws -> UInt64 {
        if error is CancellationError { throw error }
        for attempt in 0..<5 {
            let first: RecordedEvent?
            do {
                first = try await log.readStream(accountId, from: 1, limit: 1).first
            } catch let lookup where isTransientFailure(lookup) && attempt < 4 {
                try await Task.sleep(for: .seconds(1))
                continue
            }
            guard let first else { throw error }
            Self.logger.warning("an append whose answer was lost had committed", metadata: ["account": "\(accountId)", "error": "\(error)"])
            return first.position
        }
        throw error
    }

    /// Creates an anonymous account (no user id, no password), marked anonymous and new.
    ///
    /// - Parameter context: who asks, recorded with the event.
    /// - Returns: the new account's details.
    /// - Throws: ``AccountStoreError`` for a storage failure.
    @discardableResult
    public func signInAnonymously(context: Context = Context()) async throws -> AccountDetails {
        try await anonymousSignup(context: context).details
    }

    /// ``signInAnonymously(context:)``, telling whether this call created the account or found the
    /// one a first attempt with the same idempotency key created (`replayed`).
    package func anonymousSignup(context: Context) async throws -> (details: AccountDetails, replayed: Bool) {
        let accountId = try await keyedAccountId(.anonymousSignup, userId: "", context: context) ?? options.makeAccountId()
        let position: UInt64
        var replayed = false
        do {
            let result = try await accounts.append(
                [.accountCreated(userId: "", passwordHash: nil, isAnonymous: true, values: [:])],
                to: accountId, expectedVersion: .noStream, metadata: context.metadata, claims: [], releases: [],
                eventIDs: try await keyedEventIDs(.anonymousSignup, accountId: accountId, context: context, count: 1)
            )
            position = result.positions.upperBound
            replayed = result.wasDuplicate
        } catch {
            position = try await committedFirstRecord(of: accountId, after: error)
            // Another attempt made the stream first; otherwise this one committed and lost its answer.
            if case EventLogError.wrongExpectedVersion = error { replayed = true }
        }
        try await awaitCache(position)
        guard var details = try details(of: accountId) else { throw AccountStoreError.accountNotFound(accountId) }
        details.isNewUser = true
        return (details, replayed)
    }

    /// Turns an anonymous account into a full one, keeping its account id and its values.
    ///
    /// - Parameters:
    ///   - accountId: the anonymous account.
    ///   - signupDetails: the details it gains, with a user id and a password.
    ///   - context: who asks, recorded with the event.
    /// - Returns: the account's details after the upgrade, marked as a new user.
    /// - Throws: `AccountOperationError` for invalid details, `AccountServiceError.credentialsTaken`
    ///   for a user id of another account, ``AccountStoreError`` for an account that is not
    ///   anonymous or does not exist.
    @discardableResult
    public func upgrade(_ accountId: String, with signupDetails: AccountDetails, context: Context = Context()) async throws -> AccountDetails {
        try await upgrade(accountId, with: signupDetails, context: context, validating: true)
    }

    func upgrade(_ accountId: String, with signupDetails: AccountDetails, context: Context, validating: Bool) async throws -> AccountDetails {
        let signup = try await prepareSignup(signupDetails, validating: validating, refusingTakenUserId: true)
        return try await upgrade(accountId, userId: signup.userId, passwordHash: signup.hash, values: signup.values, context: context) {
            AccountStoreError.notAnonymous(accountId)
        }
    }

    /// Appends the `account.anonymous-upgraded` of an upgrade whose password is hashed already;
    /// throws `notAnonymous()` when the account is not (or no longer) anonymous.
    func upgrade(
        _ accountId: String, userId: String, passwordHash hash: String, values: EncodedAccountValues, context: Context,
        notAnonymous: () -> any Error
    ) async throws -> AccountDetails {
        try Self.checkUserId(userId)
        if try await accounts.legacyHolder(ofUserId: userId, other: accountId) != nil { throw AccountServiceError.credentialsTaken }
        if try await lookAlikeHolder(ofUserId: userId, other: accountId) != nil { throw AccountServiceError.credentialsTaken }
        let outcome = try await retrying(accountId) { state in
            guard state.isAnonymous else { throw notAnonymous() }
            return ([.anonymousAccountUpgraded(userId: userId, passwordHash: hash, values: values)], accounts.newClaims(forUserId: userId), [])
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        var details = try details(from: outcome.state)
        details.isNewUser = true
        return details
    }

    /// Records a logout.
    ///
    /// - Parameters:
    ///   - accountId: the account that signed out.
    ///   - context: who asks, recorded with the event.
    /// - Throws: ``AccountStoreError`` for an unknown account or a storage failure.
    public func logout(_ accountId: String, context: Context = Context()) async throws {
        guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
        try await accounts.append([.loggedOut], to: accountId, expectedVersion: .any, metadata: context.metadata)
    }

    /// Changes an account's values, user id or password. Validates first; appends the events with
    /// the version it validated against, and validates again if another writer got there first.
    ///
    /// - Parameters:
    ///   - accountId: the account to change.
    ///   - modifications: the values to set and to remove.
    ///   - context: who asks, recorded with the events.
    /// - Returns: the account's details as of this change.
    /// - Throws: `AccountOperationError`, `AccountServiceError.credentialsTaken` for a user id of
    ///   another account, ``AccountStoreError``.
    @discardableResult
    public func modify(_ accountId: String, _ modifications: AccountModifications, context: Context = Context()) async throws -> AccountDetails {
        try await modify(accountId, modifications, context: context, validating: true)
    }

    /// Writes values the server manages, which clients cannot change: keys configured `.manual`
    /// (read-only, server-managed values such as a study cohort or a verified flag) and keys without
    /// the `mutable` option. Required keys still cannot be removed or emptied and string rules still
    /// apply; the user id and the password change only through `modify(_:_:context:)`. Logged like
    /// any change, with `context`'s actor.
    ///
    /// - Parameters:
    ///   - accountId: the account to change.
    ///   - modifications: the managed values to set and to remove.
    ///   - context: who changes them (usually the server's own actor), recorded with the events.
    /// - Returns: the account's details as of this change.
    /// - Throws: `AccountOperationError` for a rule the values break, ``AccountStoreError`` for an
    ///   unknown account or a storage failure.
    public func modifyManaged(
        _ accountId: String, _ modifications: AccountModifications, context: Context = Context()
    ) async throws
        -> AccountDetails
    {
        let credentials = [AccountDetails.__Key_userId.identifier, AccountDetails.__Key_password.identifier]
        let touched = (modifications.modifiedKeys + modifications.removedKeys).map { $0.identifier }.filter { credentials.contains($0) }
        if !touched.isEmpty { throw AccountOperationError.mutatingNonMutableAccountKeys(touched) }
        try AccountValidation.validateModifications(
            modifications, values: valueConfiguration, service: serviceConfiguration, serverManaged: true)
        return try await modify(accountId, modifications, context: context, validating: false)
    }

    func modify(_ accountId: String, _ modifications: AccountModifications, context: Context, validating: Bool) async throws -> AccountDetails {
        // The details as of this change, even if another writer changed or deleted the account since.
        try details(from: try await change(accountId, modifications, context: context, validating: validating))
    }

    /// ``modify(_:_:context:)`` answering the account's state as of the change rather than its
    /// details: what the account server renders once (``rendering(of:as:_:)``) for its answer and
    /// for the reads that follow. Unless another writer changed the account in the meantime, it is
    /// the state the store now keeps for the account (read back from the log, with the events'
    /// recorded times), so the next session check starts from it.
    ///
    /// - Parameters:
    ///   - accountId: the account to change.
    ///   - modifications: the values to set and to remove.
    ///   - context: who asks, recorded with the events.
    /// - Returns: the account's state right after the change.
    /// - Throws: what ``modify(_:_:context:)`` throws.
    package func modifiedState(
        _ accountId: String, _ modifications: AccountModifications, context: Context = Context()
    ) async throws -> AccountState {
        let after = try await change(accountId, modifications, context: context, validating: true)
        // The change committed: a failed read-back must not answer it as failed.
        do {
            if let current = try await currentState(of: accountId), current.version == after.version { return current }
        } catch {
            Self.logger.warning("cannot read back a committed change", metadata: ["account": "\(accountId)", "error": "\(error)"])
        }
        return after
    }

    private func change(_ accountId: String, _ modifications: AccountModifications, context: Context, validating: Bool) async throws -> AccountState {
        try checkLimits(modifications.modifiedDetails, keyCount: modifications.modifiedKeys.count + modifications.removedKeys.count)
        if validating {
            try AccountValidation.validateModifications(modifications, values: valueConfiguration, service: serviceConfiguration)
        }
        try checkSupported(modifications.modifiedKeys + modifications.removedKeys)
        let userIdKey = AccountDetails.__Key_userId.self
        let passwordKey = AccountDetails.__Key_password.self
        let modified = try loggedValues(modifications.modifiedDetails)
        var newPasswordHash: String?
        if let password = modifications.modifiedDetails.password { newPasswordHash = try await hashPassword(password) }
        let removed = modifications.removedKeys.map { $0.identifier }.filter { $0 != userIdKey.identifier && $0 != passwordKey.identifier }
        if let newUserId = modifications.modifiedDetails[userIdKey] {
            try Self.checkUserId(newUserId)
            if try await accounts.legacyHolder(ofUserId: newUserId, other: accountId) != nil { throw AccountServiceError.credentialsTaken }
            if try await lookAlikeHolder(ofUserId: newUserId, other: accountId) != nil { throw AccountServiceError.credentialsTaken }
        }
        let outcome = try await retrying(accountId, keyed: .modify) { state in
            var events: [AccountEvent] = []
            var claims: Set<String> = []
            var releases: Set<String> = []
            if let newUserId = modifications.modifiedDetails[userIdKey], newUserId != state.userId {
                events.append(.userIdChanged(old: state.userId, new: newUserId))
                claims.formUnion(accounts.newClaims(forUserId: newUserId))
                // The old user id's claim, current or written before UserIdNormalization.
                if !state.userId.isEmpty { releases = accounts.claims(forUserId: state.userId).subtracting(claims) }
            }
            if let newPasswordHash {
                events.append(.passwordChanged(passwordHash: newPasswordHash))
                events += Self.endingSessions(of: state, reason: "password-changed")
            }
            if !modified.isEmpty || !removed.isEmpty { events.append(.detailsModified(modified: modified, removed: removed)) }
            return (events, claims, releases)
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        return outcome.state
    }

    /// Deletes an account: appends `account.deleted`, releases its user id and destroys its key
    /// (crypto-shredding). The events stay in the log (it is append-only) but their personal data
    /// can no longer be read; the cache forgets the account's values.
    ///
    /// - Parameters:
    ///   - accountId: the account to delete.
    ///   - context: who asks, recorded with the event.
    /// - Throws: ``AccountStoreError`` for an unknown account or a storage failure.
    public func delete(_ accountId: String, context: Context = Context()) async throws {
        // Crypto-shredding: mark the key first, so that a crash after the append is finished at
        // the next open; destroy it once the deletion is in the log and in the cache.
        try await accounts.vault?.offPool { try $0.markShredding(accountId) }
        let position: UInt64?
        do {
            position = try await retrying(accountId, keyed: .delete) { state in
                let releases = (state.userId.isEmpty ? [] : accounts.claims(forUserId: state.userId)).union(identityClaims(of: state))
                    .union([Self.disabledClaim(accountId)])
                return (Self.endingSessions(of: state, reason: "account-deleted") + [.accountDeleted], [], releases)
            } context: {
                context
            }.position
        } catch {
            do {
                try await accounts.vault?.offPool { try $0.cancelShredding(accountId) }
            } catch let cancelling {
                // The mark stays; the next open of the store settles it (the deletion is not in the log).
                Self.logger.error(
                    "a failed deletion's shredding mark could not be taken back",
                    metadata: ["account": "\(accountId)", "error": "\(cancelling)", "deletion error": "\(error)"])
            }
            throw error
        }
        // Not cancelled with the caller: the key goes once the cache has the deletion, even when
        // the caller stops waiting (else it would wait for the next open of the store).
        let finishing = Task.detached { [self] in
            if let position { try await awaitCache(position) }
            try await accounts.vault?.offPool { try $0.shred(accountId) }
        }
        try await finishing.value
    }
}
