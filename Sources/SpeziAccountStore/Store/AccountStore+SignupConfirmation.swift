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
    /// The store's signup confirmations (``SignupConfirmations``), with its options.
    var signupConfirmations: SignupConfirmations {
        SignupConfirmations(
            core: self, validity: options.signupConfirmationValidity, delivery: options.signupConfirmationDelivery,
            makeAccountId: options.makeAccountId)
    }

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
        try await signupConfirmations.requestSignup(signupDetails)
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
        try await signupConfirmations.requestUpgrade(accountId, with: signupDetails)
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
        try await signupConfirmations.confirm(token: token, context: context)
    }
}
