//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

extension AccountStore {
    /// The claim a disabled account holds.
    static func disabledClaim(_ accountId: String) -> String { "disabled:" + accountId }

    /// How long a disabled account's sign-in is told to wait (as a locked account's is).
    static let disabledRetryAfter: TimeInterval = 86_400

    /// What a disabled account's sign-in is answered: a lock of ``disabledRetryAfter``.
    var disabledRefusal: AccountStoreError {
        .lockedOut(until: options.clock().addingTimeInterval(Self.disabledRetryAfter))
    }

    /// Disables an account (an administrator's action): `account.disabled` with the reason, and
    /// the end of every open session, in one append that takes the claim `disabled:<account id>`.
    /// Until ``enable(_:reason:context:)``, a sign-in with the right password or a linked identity
    /// is answered ``AccountStoreError/lockedOut(until:)``, and a session started at the same time
    /// is ended right after it. Disabling a disabled account changes nothing.
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - reason: Why (recorded sealed: it may name the owner).
    ///   - context: Who asks (the administrator as actor), recorded with the events.
    /// - Returns: How many sessions ended; nil when the account was disabled already.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` for a deleted or unknown account; the log's errors.
    @discardableResult
    public func disable(_ accountId: String, reason: String, context: Context = Context()) async throws -> Int? {
        if try await isDisabled(accountId) {
            guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
            return nil
        }
        var ended = 0
        let outcome = try await retrying(accountId) { state in
            ended = state.sessions.count
            return (
                Self.endingSessions(of: state, reason: "account-disabled") + [.accountDisabled(reason: reason)], [Self.disabledClaim(accountId)], []
            )
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        return ended
    }

    /// Enables a disabled account again (`account.enabled` with the reason, releasing its claim).
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - reason: Why (recorded sealed).
    ///   - context: Who asks, recorded with the event.
    /// - Returns: False when the account was not disabled (nothing is appended).
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` for a deleted or unknown account; the log's errors.
    @discardableResult
    public func enable(_ accountId: String, reason: String, context: Context = Context()) async throws -> Bool {
        guard try await isDisabled(accountId) else {
            guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
            return false
        }
        let outcome = try await retrying(accountId) { _ in
            ([.accountEnabled(reason: reason)], [], [Self.disabledClaim(accountId)])
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        return true
    }

    /// Whether an administrator disabled the account (it holds the claim `disabled:<account id>`):
    /// one claim lookup, shared by every process and server on the log.
    ///
    /// - Parameter accountId: The account.
    /// - Returns: True while it is disabled.
    /// - Throws: The log's errors.
    public func isDisabled(_ accountId: String) async throws -> Bool {
        try await log.claimOwner(Self.disabledClaim(accountId)) == accountId
    }

    /// After a sign-in appended `events` (with its session's start): when the account was disabled
    /// meanwhile, ends that session and throws as for a locked account. A disable that committed
    /// first is seen here; one that commits after sees the session and ends it itself.
    func refuseIfDisabled(_ accountId: String, after events: [AccountEvent], context: Context) async throws {
        guard try await isDisabled(accountId) else { return }
        let ending: [AccountEvent] = events.compactMap { event in
            if case let .sessionStarted(hash, _) = event { return .sessionEnded(sessionHash: hash, reason: "account-disabled") }
            return nil
        }
        if !ending.isEmpty {
            let result = try await accounts.append(ending, to: accountId, expectedVersion: .any, metadata: context.metadata)
            try await awaitCache(result.positions.upperBound)
        }
        throw disabledRefusal
    }
}
