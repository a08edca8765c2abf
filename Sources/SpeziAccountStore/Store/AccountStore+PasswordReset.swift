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
        let token = BearerSecret.make()
        guard userId.utf8.count <= options.limits.maxUserIdBytes, let accountId = try await accounts.accountId(forUserId: userId),
            let state = try await currentState(of: accountId), !state.isDeleted, state.passwordHash != nil
        else { return }
        let expiresAt = options.clock().addingTimeInterval(Double(options.passwordResetValidity.components.seconds))
        let event = AccountEvent.passwordResetRequested(
            tokenHash: BearerSecret.hash(token), expiresAtMicros: Int64((expiresAt.timeIntervalSince1970 * 1_000_000).rounded()))
        try await accounts.append([event], to: accountId, expectedVersion: .any, metadata: context.metadata)
        guard let delivery = options.passwordResetDelivery else {
            Self.logger.warning("a password reset was requested, but no delivery is configured", metadata: ["account": "\(accountId)"])
            return
        }
        await delivery(PasswordResetRequest(accountId: accountId, userId: state.userId, token: token, expiresAt: expiresAt))
    }

    /// ``requestPasswordReset(userId:context:)`` without waiting for it: the caller returns at
    /// once, whether or not the user id has an account, so that the answer's timing tells nothing.
    /// A failure is logged; ``settleBackgroundWrites()`` waits for the request.
    ///
    /// - Parameters:
    ///   - userId: the user id the reset is asked for.
    ///   - context: who asks, recorded with the event.
    public func startPasswordResetRequest(userId: String, context: Context = Context()) {
        backgroundWrites.start { [self] in
            do {
                try await requestPasswordReset(userId: userId, context: context)
            } catch {
                Self.logger.error("a password reset request failed", metadata: ["error": "\(error)"])
            }
        }
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
        let start = ContinuousClock.now
        do {
            try await resetPassword(userId: userId, token: token, newPassword: newPassword, context: context)
        } catch AccountStoreError.invalidPasswordResetToken {
            if options.defences.resetAnswerFloor { try await Task.sleep(until: start + options.defences.resetFloor) }
            throw AccountStoreError.invalidPasswordResetToken
        }
    }

    /// The shortest time before a reset completion is refused for its token or user id.
    public static let invalidResetAnswerTime = Duration.milliseconds(250)

    private func resetPassword(userId: String, token: String, newPassword: String, context: Context) async throws {
        var proposed = AccountDetails()
        proposed.password = newPassword
        try AccountValidation.validateRules(proposed, service: serviceConfiguration)
        guard newPassword.utf8.count <= options.limits.maxPasswordBytes, userId.utf8.count <= options.limits.maxUserIdBytes,
            token.utf8.count <= 512, let accountId = try await accounts.accountId(forUserId: userId)
        else {
            throw AccountStoreError.invalidPasswordResetToken
        }
        let presented = Array(BearerSecret.hash(token).utf8)
        var newHash: String?
        for _ in 0..<options.maxConflictRetries {
            guard let state = try await currentState(of: accountId), !state.isDeleted, state.passwordHash != nil else {
                throw AccountStoreError.invalidPasswordResetToken
            }
            let now = AccountState.micros(options.clock())
            // Every open token is compared, so the time taken does not say which one matched.
            let matches = state.resetTokens.reduce(false) { found, request in
                PasswordHasher.constantTimeEquals(presented, Array(request.key.utf8)) && now < request.value || found
            }
            guard matches else { throw AccountStoreError.invalidPasswordResetToken }
            // Only a valid token pays for the new password's hash.
            let hash: String
            if let newHash { hash = newHash } else { hash = try await hashPassword(newPassword) }
            newHash = hash
            // Every open session ends with the reset (whoever knew the old password is signed out).
            do {
                let result = try await accounts.append(
                    [.passwordChanged(passwordHash: hash)] + endingSessions(of: state, reason: "password-reset"), to: accountId,
                    expectedVersion: .exact(state.version), metadata: context.metadata)
                throttle.clear(userKey: AccountLog.normalizedUserId(userId), now: options.clock())
                try await awaitCache(result.positions.upperBound)
                return
            } catch EventLogError.wrongExpectedVersion {
                // The account changed meanwhile: look again (a password change there uses the tokens up).
                continue
            }
        }
        throw AccountStoreError.tooMuchContention(accountId: accountId, attempts: options.maxConflictRetries)
    }
}
