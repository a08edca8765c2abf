//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import EventLog
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
    /// or delivered), so the request cannot be used to find out which accounts exist. A newer
    /// request replaces an older token.
    public func requestPasswordReset(userId: String, context: Context = Context()) async throws {
        let token = Self.makeResetToken()
        guard userId.utf8.count <= options.limits.maxUserIdBytes, let accountId = try await accounts.accountId(forUserId: userId),
            let state = try await accounts.load(accountId), !state.isDeleted, state.passwordHash != nil
        else { return }
        let expiresAt = options.clock().addingTimeInterval(Double(options.passwordResetValidity.components.seconds))
        let event = AccountEvent.passwordResetRequested(
            tokenHash: Self.resetTokenHash(token), expiresAtMicros: Int64((expiresAt.timeIntervalSince1970 * 1_000_000).rounded()))
        try await accounts.append([event], to: accountId, expectedVersion: .any, metadata: context.metadata)
        guard let delivery = options.passwordResetDelivery else {
            Self.logger.warning("a password reset was requested, but no delivery is configured", metadata: ["account": "\(accountId)"])
            return
        }
        await delivery(PasswordResetRequest(accountId: accountId, userId: state.userId, token: token, expiresAt: expiresAt))
    }

    /// Completes a password reset with the token its owner received: `newPassword` (checked by the
    /// service's rules) replaces the password, which also uses the token up. A token works only if
    /// it belongs to the latest reset request of the account, has not expired, and no password
    /// change followed the request; anything else, an unknown user id included, throws
    /// ``AccountStoreError/invalidPasswordResetToken``.
    public func completePasswordReset(userId: String, token: String, newPassword: String, context: Context = Context()) async throws {
        var proposed = AccountDetails()
        proposed.password = newPassword
        try AccountValidation.validateRules(proposed, service: serviceConfiguration)
        guard newPassword.utf8.count <= options.limits.maxPasswordBytes, userId.utf8.count <= options.limits.maxUserIdBytes,
            let accountId = try await accounts.accountId(forUserId: userId)
        else { throw AccountStoreError.invalidPasswordResetToken }
        let presented = Array(Self.resetTokenHash(token).utf8)
        let newHash = try await hasher.hashOffPool(newPassword)
        for _ in 0..<options.maxConflictRetries {
            let (pending, version) = try await pendingReset(accountId)
            guard let pending, PasswordHasher.constantTimeEquals(presented, Array(pending.tokenHash.utf8)),
                Int64((options.clock().timeIntervalSince1970 * 1_000_000).rounded()) < pending.expiresAtMicros
            else { throw AccountStoreError.invalidPasswordResetToken }
            // Every open session ends with the reset (whoever knew the old password is signed out).
            guard let state = try await accounts.load(accountId, throughVersion: version) else { throw AccountStoreError.invalidPasswordResetToken }
            do {
                let result = try await accounts.append(
                    [.passwordChanged(passwordHash: newHash)] + endingSessions(of: state, reason: "password-reset"), to: accountId,
                    expectedVersion: .exact(version), metadata: context.metadata)
                try await awaitCache(result.positions.upperBound)
                return
            } catch EventLogError.wrongExpectedVersion {
                // The account changed meanwhile: look again (a password change there uses the token up).
                continue
            }
        }
        throw AccountStoreError.tooMuchContention(accountId: accountId, attempts: options.maxConflictRetries)
    }

    /// The account's open reset request (the latest one, unless a password change or the deletion
    /// followed it) and the stream's version.
    private func pendingReset(_ accountId: String) async throws -> (request: (tokenHash: String, expiresAtMicros: Int64)?, version: UInt64) {
        var pending: (tokenHash: String, expiresAtMicros: Int64)?
        var version: UInt64 = 0
        var next: UInt64 = 1
        while true {
            let batch = try await log.readStream(accountId, from: next, limit: 1_000)
            guard let last = batch.last else { break }
            for record in batch {
                switch record.type {
                case "auth.password-reset-requested":
                    if case let .passwordResetRequested(tokenHash, expiresAtMicros) = try accounts.event(from: record) {
                        pending = (tokenHash, expiresAtMicros)
                    }
                case "account.password-changed", "account.deleted":
                    pending = nil
                default:
                    break
                }
            }
            version = last.streamVersion
            next = last.streamVersion + 1
        }
        return (pending, version)
    }

    /// 32 random bytes as base64url without padding.
    static func makeResetToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The lower-case hex SHA-256 of a token, as logged.
    static func resetTokenHash(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
