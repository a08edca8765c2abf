//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Logging

/// Password resets: single-use tokens logged as their SHA-256 (`auth.password-reset-requested`),
/// handed to a delivery, and completed by a password change that ends every session. Its own
/// settings are the tokens' validity, the delivery and the answer floor; the store is reached
/// through ``AccountCommandCore`` only. ``AccountStore/requestPasswordReset(userId:context:)`` and
/// ``AccountStore/completePasswordReset(userId:token:newPassword:context:)`` are its public doors.
struct PasswordResets: Sendable {
    static let logger = Logger(label: "SpeziAccountStore.resets")

    let core: any AccountCommandCore
    /// How long a token works.
    let validity: Duration
    /// Where tokens go; nil logs a warning instead.
    let delivery: (@Sendable (PasswordResetRequest) async -> Void)?
    /// The shortest time a refusal takes (nil: no floor, a test's defence switch).
    let answerFloor: Duration?
    /// Where requests run without their callers waiting.
    let background: BackgroundWrites

    /// Logs a new token for the account of `userId` and delivers it; nothing for an unknown,
    /// deleted or anonymous account.
    func request(userId: String, context: AccountStore.Context) async throws {
        let token = BearerSecret.make()
        guard userId.utf8.count <= core.limits.maxUserIdBytes, let accountId = try await core.accounts.accountId(forUserId: userId),
            let state = try await core.currentState(of: accountId), !state.isDeleted, state.passwordHash != nil
        else { return }
        let expiresAt = core.now().addingTimeInterval(Double(validity.components.seconds))
        let event = AccountEvent.passwordResetRequested(tokenHash: BearerSecret.hash(token), expiresAtMicros: AccountState.micros(expiresAt))
        try await core.accounts.append([event], to: accountId, expectedVersion: .any, metadata: context.metadata)
        guard let delivery else {
            Self.logger.warning("a password reset was requested, but no delivery is configured", metadata: ["account": "\(accountId)"])
            return
        }
        await delivery(PasswordResetRequest(accountId: accountId, userId: state.userId, token: token, expiresAt: expiresAt))
    }

    /// ``request(userId:context:)`` in the background; a failure is logged.
    func start(userId: String, context: AccountStore.Context) {
        background.start { [self] in
            do {
                try await request(userId: userId, context: context)
            } catch {
                Self.logger.error("a password reset request failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Completes a reset; a refusal for the token or user id takes at least the answer floor.
    func complete(userId: String, token: String, newPassword: String, context: AccountStore.Context) async throws {
        let start = ContinuousClock.now
        do {
            try await reset(userId: userId, token: token, newPassword: newPassword, context: context)
        } catch AccountStoreError.invalidPasswordResetToken {
            if let answerFloor { try await Task.sleep(until: start + answerFloor) }
            throw AccountStoreError.invalidPasswordResetToken
        }
    }

    private func reset(userId: String, token: String, newPassword: String, context: AccountStore.Context) async throws {
        try core.validatePassword(newPassword)
        guard newPassword.utf8.count <= core.limits.maxPasswordBytes, userId.utf8.count <= core.limits.maxUserIdBytes,
            token.utf8.count <= 512, let accountId = try await core.accounts.accountId(forUserId: userId)
        else {
            throw AccountStoreError.invalidPasswordResetToken
        }
        let presented = Array(BearerSecret.hash(token).utf8)
        var newHash: String?
        for _ in 0..<core.maxConflictRetries {
            guard let state = try await core.currentState(of: accountId), !state.isDeleted, state.passwordHash != nil else {
                throw AccountStoreError.invalidPasswordResetToken
            }
            let now = AccountState.micros(core.now())
            // Every open token is compared, so the time taken does not say which one matched.
            let matches = state.resetTokens.reduce(false) { found, request in
                PasswordHasher.constantTimeEquals(presented, Array(request.key.utf8)) && now < request.value || found
            }
            guard matches else { throw AccountStoreError.invalidPasswordResetToken }
            // Only a valid token pays for the new password's hash.
            let hash: String
            if let newHash { hash = newHash } else { hash = try await core.hashPassword(newPassword) }
            newHash = hash
            // Every open session ends with the reset (whoever knew the old password is signed out).
            do {
                let result = try await core.accounts.append(
                    [.passwordChanged(passwordHash: hash)] + AccountStore.endingSessions(of: state, reason: "password-reset"), to: accountId,
                    expectedVersion: .exact(state.version), metadata: context.metadata)
                core.clearLoginLocks(userId: userId)
                try await core.awaitCache(result.positions.upperBound)
                return
            } catch EventLogError.wrongExpectedVersion {
                // The account changed meanwhile: look again (a password change there uses the tokens up).
                continue
            }
        }
        throw AccountStoreError.tooMuchContention(accountId: accountId, attempts: core.maxConflictRetries)
    }
}
