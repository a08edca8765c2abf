//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation
import SpeziAccount

/// A password reset to hand to the account's owner (by mail, say). The token is made once and
/// never stored: the log keeps only its SHA-256.
public struct PasswordResetRequest: Sendable {
    /// The account.
    public let accountId: String
    /// The user id the reset was requested for (where to send it).
    public let userId: String
    /// The single-use token (43 characters of base64url) that completes the reset.
    public let token: String
    /// When the token stops working.
    public let expiresAt: Date
}

extension AccountStore {
    /// The store's password resets (``PasswordResets``), with its options.
    var passwordResets: PasswordResets {
        PasswordResets(
            core: self, validity: options.passwordResetValidity, delivery: options.passwordResetDelivery,
            answerFloor: options.defences.resetAnswerFloor ? options.defences.resetFloor : nil, background: backgroundWrites)
    }

    /// Requests a password reset for the account of `userId`: a new single-use token, valid for
    /// ``AccountStoreOptions/passwordResetValidity``, is logged as its SHA-256
    /// (`auth.password-reset-requested`) and handed to ``AccountStoreOptions/passwordResetDelivery``.
    ///
    /// Unknown user ids, deleted and anonymous accounts are answered the same way (nothing is logged
    /// or delivered), so the request cannot be used to find out which accounts exist. Earlier
    /// tokens stay valid until they expire or one of them is used: a new request does not void the
    /// link the owner holds.
    ///
    /// - Parameters:
    ///   - userId: the user id the reset is asked for.
    ///   - context: who asks, recorded with the event.
    /// - Throws: a storage failure (never for an unknown user id).
    public func requestPasswordReset(userId: String, context: Context = Context()) async throws {
        try await passwordResets.request(userId: userId, context: context)
    }

    /// ``requestPasswordReset(userId:context:)`` without waiting for it: the caller returns at
    /// once, whether or not the user id has an account, so that the answer's timing tells nothing.
    /// A failure is logged; ``settleBackgroundWrites()`` waits for the request.
    ///
    /// - Parameters:
    ///   - userId: the user id the reset is asked for.
    ///   - context: who asks, recorded with the event.
    public func startPasswordResetRequest(userId: String, context: Context = Context()) {
        passwordResets.start(userId: userId, context: context)
    }

    /// Completes a password reset with a token its owner received: `newPassword` (checked by the
    /// service's rules) replaces the password, which also uses every open token up. A token works
    /// if it belongs to a reset request of the account made after its last password change, and
    /// has not expired; anything else, an unknown user id included, throws
    /// ``AccountStoreError/invalidPasswordResetToken``, never sooner than
    /// ``invalidResetAnswerTime`` after the call. The token is checked first, against the account's
    /// state (``AccountState/resetTokens``): a wrong one costs no password hash and reads none of the
    /// stream, and the floor hides whether the user id has an account. A completed reset also lifts
    /// every login lock of the user id.
    ///
    /// - Parameters:
    ///   - userId: the user id the reset was asked for.
    ///   - token: the token the owner received.
    ///   - newPassword: the new password (checked against the service's password rules).
    ///   - context: who asks, recorded with the events.
    /// - Throws: ``AccountStoreError/invalidPasswordResetToken`` for anything but a valid token of
    ///   this user id, `AccountOperationError` for a password the rules refuse.
    public func completePasswordReset(userId: String, token: String, newPassword: String, context: Context = Context()) async throws {
        try await passwordResets.complete(userId: userId, token: token, newPassword: newPassword, context: context)
    }

    /// The shortest time before a reset completion is refused for its token or user id.
    public static let invalidResetAnswerTime = Duration.milliseconds(250)
}
