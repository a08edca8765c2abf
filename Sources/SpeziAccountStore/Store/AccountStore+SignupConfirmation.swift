//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation
import SpeziAccount

/// What to send to the owner of a user id after a signup request (by mail, say). Both kinds go to
/// the same address and the request is answered the same way for both, so a signup cannot be used
/// to find out which user ids have accounts.
public enum SignupConfirmationMessage: Sendable, Equatable {
    /// The user id is free: `token` completes the signup
    /// (``AccountStore/confirmSignup(token:context:)``) until `expiresAt`.
    case confirm(userId: String, token: String, expiresAt: Date)
    /// The user id has an account already: tell its owner that somebody tried to sign up with it
    /// (they may sign in, or reset their password).
    case alreadyRegistered(userId: String)

    /// Where the message goes.
    public var userId: String {
        switch self {
        case let .confirm(userId, _, _), let .alreadyRegistered(userId): userId
        }
    }
}

extension AccountStore {
    /// Requests a signup that only the owner of the user id can complete: the details are checked
    /// and the password hashed as ``signup(_:context:)`` does, then a
    /// ``SignupConfirmationMessage`` goes to ``AccountStoreOptions/signupConfirmationDelivery``:
    /// a token that carries the whole signup when the user id is free, a notice to the account's
    /// owner when it is taken. Nothing is logged until the token comes back, and the caller learns
    /// nothing about the user id: invalid details throw as for a signup, everything else returns
    /// the same way after the same work.
    ///
    /// - Parameters:
    ///   - signupDetails: The new account's details, with its user id and password.
    ///   - context: Who asks. Nothing is logged for a request, so it is not recorded; the
    ///     context given to ``confirmSignup(token:context:)`` is.
    /// - Throws: what ``signup(_:context:)`` throws for invalid details (never `credentialsTaken`),
    ///   ``AccountStoreError/signupConfirmationUnavailable(_:)`` without a delivery or a key vault.
    public func requestSignup(_ signupDetails: AccountDetails, context: Context = Context()) async throws {
        let key = try signupTokenKey()
        let signup = try await prepareSignup(signupDetails, validating: true)
        let event = AccountEvent.accountCreated(userId: signup.userId, passwordHash: signup.hash, isAnonymous: false, values: signup.values)
        try await deliverConfirmation(kind: .signup, accountId: options.makeAccountId(), userId: signup.userId, event: event, key: key)
    }

    /// Requests the upgrade of the anonymous account `accountId` to a full one, confirmed like
    /// ``requestSignup(_:context:)``: a token goes to the new user id's owner, or a notice when it
    /// has an account already. The account keeps its id and values when the token comes back.
    ///
    /// - Parameters:
    ///   - accountId: The anonymous account to upgrade.
    ///   - signupDetails: The details it gains, with a user id and a password.
    ///   - context: Who asks. Nothing is logged for a request, so it is not recorded; the
    ///     context given to ``confirmSignup(token:context:)`` is.
    /// - Throws: ``AccountStoreError/notAnonymous(_:)`` for a full account,
    ///   ``AccountStoreError/accountNotFound(_:)``, and what ``requestSignup(_:context:)`` throws.
    public func requestUpgrade(_ accountId: String, with signupDetails: AccountDetails, context: Context = Context()) async throws {
        let key = try signupTokenKey()
        guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
        guard state.isAnonymous else { throw AccountStoreError.notAnonymous(accountId) }
        let signup = try await prepareSignup(signupDetails, validating: true)
        let event = AccountEvent.anonymousAccountUpgraded(userId: signup.userId, passwordHash: signup.hash, values: signup.values)
        try await deliverConfirmation(kind: .upgrade, accountId: accountId, userId: signup.userId, event: event, key: key)
    }

    /// Completes a signup (or upgrade) requested with ``requestSignup(_:context:)`` with the token
    /// its owner received, and returns the new account's details. A token works once, until it
    /// expires (``AccountStoreOptions/signupConfirmationValidity``), on every store that shares the
    /// key vault.
    ///
    /// - Parameters:
    ///   - token: The token from the ``SignupConfirmationMessage``.
    ///   - context: Who confirms, recorded with the account's events.
    /// - Returns: The details of the new (or upgraded) account as the cache shows them.
    /// - Throws: ``AccountStoreError/invalidSignupToken`` for a token that is malformed, forged,
    ///   expired or used (its account exists, or the anonymous account it upgrades is gone or
    ///   upgraded), `AccountServiceError.credentialsTaken` when another account took the user id
    ///   since the request.
    public func confirmSignup(token: String, context: Context = Context()) async throws -> AccountDetails {
        let key = try signupTokenKey()
        guard let signup = SignupToken.open(token, with: key),
            Int64((options.clock().timeIntervalSince1970 * 1_000_000).rounded()) < signup.expiresAtMicros
        else { throw AccountStoreError.invalidSignupToken }
        switch (signup.kind, signup.event) {
        case let (.signup, .accountCreated(userId, hash?, false, values)):
            // Used: its account exists, or existed (a deleted account's key is gone, so the
            // append below could not even seal its values).
            if let version = try await log.streamVersion(signup.accountId), version > 0 { throw AccountStoreError.invalidSignupToken }
            do {
                return try await create(signup.accountId, userId: userId, passwordHash: hash, values: values, context: context)
            } catch EventLogError.wrongExpectedVersion {
                throw AccountStoreError.invalidSignupToken
            }
        case let (.upgrade, .anonymousAccountUpgraded(userId, hash?, values)):
            do {
                return try await upgrade(signup.accountId, userId: userId, passwordHash: hash, values: values, context: context) {
                    AccountStoreError.invalidSignupToken
                }
            } catch AccountStoreError.accountNotFound {
                throw AccountStoreError.invalidSignupToken
            }
        default:
            throw AccountStoreError.invalidSignupToken
        }
    }

    /// Seals and delivers the confirmation of a free user id, or the notice for a taken one.
    private func deliverConfirmation(
        kind: SignupToken.Kind, accountId: String, userId: String, event: AccountEvent, key: SymmetricKey
    )
        async throws
    {
        guard let delivery = options.signupConfirmationDelivery else {
            throw AccountStoreError.signupConfirmationUnavailable("no delivery is configured")
        }
        if try await accounts.accountId(forUserId: userId) != nil {
            await delivery(.alreadyRegistered(userId: userId))
            return
        }
        let expiresAt = options.clock().addingTimeInterval(Double(options.signupConfirmationValidity.components.seconds))
        let token = try SignupToken(
            kind: kind, accountId: accountId, expiresAtMicros: Int64((expiresAt.timeIntervalSince1970 * 1_000_000).rounded()), event: event
        ).sealed(with: key)
        await delivery(.confirm(userId: userId, token: token, expiresAt: expiresAt))
    }

    /// The key that seals signup tokens, derived from the vault's claim secret.
    private func signupTokenKey() throws -> SymmetricKey {
        guard options.signupConfirmationDelivery != nil else {
            throw AccountStoreError.signupConfirmationUnavailable("no delivery is configured (AccountStoreOptions.signupConfirmationDelivery)")
        }
        guard let vault = accounts.vault else {
            throw AccountStoreError.signupConfirmationUnavailable("the store has no key vault (AccountStoreOptions.cryptoShredding is off)")
        }
        return SignupToken.key(claimSecret: vault.claimSecret)
    }
}
