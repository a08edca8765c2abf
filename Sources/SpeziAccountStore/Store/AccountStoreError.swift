//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Errors of the store beyond SpeziAccount's own (`AccountOperationError`, `AccountServiceError`).
public enum AccountStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No account has this id (or it was deleted).
    case accountNotFound(String)
    /// The service does not store these keys (and no storage provider takes them).
    case unsupportedKeys([String])
    /// An anonymous-only operation on a full account, or the other way round.
    case notAnonymous(String)
    /// Other writers kept changing the account; the operation gave up after several tries.
    case tooMuchContention(accountId: String, attempts: Int)
    /// Too many failed logins in a row from this client (or a check whose turn is too far off):
    /// wait until the given time.
    case lockedOut(until: Date)
    /// The command was committed to the log at `position`, but the details cache could not
    /// confirm it in time (its projection is stalled or stopped; `reason` says why). It is not a
    /// failure: the change is in the log and reaches the cache once it advances. Do not repeat it.
    case committedNotApplied(position: UInt64, reason: String)
    /// Too many password checks are queued already; nothing was done: try again after the given
    /// number of seconds.
    case overloaded(retryAfter: Int)
    /// A value is larger than the store accepts (see ``AccountStoreLimits``); nothing was written.
    case valueTooLarge(key: String, bytes: Int, limit: Int)
    /// More keys in one operation than the store accepts; nothing was written.
    case tooManyKeys(count: Int, limit: Int)
    /// The store's key vault is missing, is another store's, or exists where the log has none: the
    /// message names the files and what to do. Nothing was opened or created.
    case keyMismatch(String)
    /// A backup, restore, import or migration could not be done; the message says why.
    case storeTransfer(String)
    /// ``AccountStoreOptions/logLocation`` names no log backend this build has; the message says why.
    case unsupportedLogLocation(String)
    /// A password reset token that is wrong, used, expired or replaced by a newer request (or a
    /// user id without an account: the answer is the same, so that it cannot probe for accounts).
    case invalidPasswordResetToken
    /// A bearer token that signs no one in: malformed, unknown, ended, expired, or of a deleted account.
    case invalidSession
    /// A signup confirmation token that is malformed, forged, expired or used.
    case invalidSignupToken
    /// Signups cannot be confirmed by their owners on this store; the message says why.
    case signupConfirmationUnavailable(String)
    /// The account has made as many changes as ``AccountStoreLimits`` allows in the current window
    /// (`limit` is `changes-per-hour` or `change-bytes-per-day`); nothing was written: try again
    /// after `until`.
    case changeLimitReached(limit: String, until: Date)
    /// The provider identity is linked to another account already; nothing was written.
    case identityTaken
    /// The account has an identity of this issuer linked already (one per provider); nothing was written.
    case identityOfIssuerLinked(issuer: String)
    /// The account has no identity of this issuer linked.
    case identityNotLinked(issuer: String)
    /// Unlinking would leave the account without a way in (no password and no other identity).
    case lastWayIn
    /// The password was right, and the account has a confirmed TOTP second factor: the sign-in
    /// needs a current code (or a recovery code) too.
    case secondFactorRequired
    /// A TOTP code that is wrong, of another time, or used already; or a recovery code that is
    /// wrong or used already.
    case invalidSecondFactor
    /// The account has no TOTP enrolment (or, to confirm, none waiting for confirmation).
    case secondFactorNotEnrolled
    /// The account has a confirmed TOTP second factor already: remove it before enrolling another.
    case secondFactorEnrolled

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .accountNotFound(id): "no account \"\(id)\""
        case let .unsupportedKeys(keys): "the service does not store \(keys.joined(separator: ", "))"
        case let .notAnonymous(id): "account \"\(id)\" is not anonymous"
        case let .tooMuchContention(id, attempts): "account \"\(id)\" kept changing under \(attempts) attempts; nothing was written"
        case let .lockedOut(until): "too many failed logins; try again after \(ISO8601DateFormatter().string(from: until))"
        case let .committedNotApplied(position, reason): "committed at position \(position); the cache has not applied it yet (\(reason))"
        case let .overloaded(seconds): "too many password checks are waiting; try again in \(seconds) s"
        case let .valueTooLarge(key, bytes, limit): "the value of \(key) has \(bytes) bytes; at most \(limit) are accepted"
        case let .tooManyKeys(count, limit): "\(count) keys in one operation; at most \(limit) are accepted"
        case let .keyMismatch(message): message
        case let .storeTransfer(message): message
        case let .unsupportedLogLocation(message): "unsupported log location: \(message)"
        case .invalidPasswordResetToken: "the password reset link is invalid or has expired: request a new one"
        case .invalidSession: "the session is invalid or has expired: sign in again"
        case .invalidSignupToken: "the signup confirmation link is invalid, used or expired: sign up again"
        case let .signupConfirmationUnavailable(reason): "signups cannot be confirmed on this store: \(reason)"
        case .identityTaken: "this sign-in is linked to another account"
        case let .identityOfIssuerLinked(issuer): "the account has a sign-in of \(issuer) linked already; unlink it first"
        case let .identityNotLinked(issuer): "the account has no sign-in of \(issuer) linked"
        case .lastWayIn: "this is the account's only way in: set a password or link another sign-in first"
        case let .changeLimitReached(limit, until):
            "the account reached its \(limit) limit; nothing was written; try again after \(ISO8601DateFormatter().string(from: until))"
        case .secondFactorRequired: "this account signs in with a second factor: send a current TOTP code or a recovery code"
        case .invalidSecondFactor: "the TOTP code or recovery code is wrong, expired or used already"
        case .secondFactorNotEnrolled: "the account has no TOTP enrolment to confirm or remove"
        case .secondFactorEnrolled: "the account has a TOTP second factor already: remove it first"
        }
    }
}
