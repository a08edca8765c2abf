//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import SpeziAccount

/// A signed-in session: the bearer token is handed out once and never stored (the log keeps the
/// SHA-256 of its secret in `auth.session-started`).
///
/// A token reads `<account id>.<secret>`, the secret being 32 random bytes in base64url. Any server
/// on the same log can check it: the account's stream says which sessions are open.
public struct AccountSession: Sendable, Equatable {
    /// The account signed in.
    public let accountId: String
    /// The bearer token.
    public let token: String
    /// When the session stops working.
    public let expiresAt: Date
}

extension AccountStore {
    /// The store's session book (``SessionBook``).
    var sessions: SessionBook { SessionBook(core: self) }

    /// Checks a user id and password (and a second factor) as
    /// ``login(userId:password:secondFactor:context:)`` does and, when they are right, opens a
    /// session in the same append as `auth.login-succeeded`.
    ///
    /// - Parameters:
    ///   - userId: The user id as entered.
    ///   - password: The password in the clear.
    ///   - secondFactor: A TOTP code or a recovery code, for an account that has a second factor.
    ///   - validity: How long the session lasts from now.
    ///   - context: Who asks, for the log and for throttling.
    /// - Returns: The account's details and the new session, whose token is handed out only here.
    /// - Throws: as ``login(userId:password:secondFactor:context:)``.
    public func startSession(
        userId: String, password: String, secondFactor: String? = nil, validity: Duration, context: Context = Context()
    ) async throws -> (details: AccountDetails, session: AccountSession) {
        let secret = BearerSecret.make()
        let expiresAt = options.clock().addingTimeInterval(Self.seconds(validity))
        let sessionHash = BearerSecret.hash(secret)
        let event = AccountEvent.sessionStarted(sessionHash: sessionHash, expiresAtMicros: Self.micros(expiresAt))
        let details = try await login(
            userId: userId, password: password, secondFactor: secondFactor, context: context,
            alsoAppend: [event] + Self.clientEvents(sessionHash, context))
        return (details, AccountSession(accountId: details.accountId, token: "\(details.accountId).\(secret)", expiresAt: expiresAt))
    }

    /// Opens a session for an account that was just created or re-authenticated by other means
    /// (a signup, an anonymous sign-in, a password change).
    ///
    /// - Parameters:
    ///   - accountId: The account to open the session for.
    ///   - validity: How long the session lasts from now.
    ///   - context: Who asks, recorded with the event; its idempotency key makes the call repeatable.
    /// - Returns: The new session, with the bearer token to hand to the client.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` for a deleted or unknown account.
    ///
    /// With an idempotency key in `context`, the session's secret is derived from it: a retry whose
    /// first attempt committed hands out the same token, with the first attempt's expiry.
    public func startSession(for accountId: String, validity: Duration, context: Context = Context()) async throws -> AccountSession {
        let secret = try await keyedSessionSecret(accountId: accountId, context: context) ?? BearerSecret.make()
        let sessionHash = BearerSecret.hash(secret)
        var expiresAt = options.clock().addingTimeInterval(Self.seconds(validity))
        let event = AccountEvent.sessionStarted(sessionHash: sessionHash, expiresAtMicros: Self.micros(expiresAt))
        let outcome = try await retrying(accountId, keyed: .sessionStart) { _ in
            ([event] + Self.clientEvents(sessionHash, context), [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        if let first = outcome.state.sessions[sessionHash] { expiresAt = Date(timeIntervalSince1970: Double(first) / 1_000_000) }
        return AccountSession(accountId: accountId, token: "\(accountId).\(secret)", expiresAt: expiresAt)
    }

    /// The account a bearer token signs in, checked against the account's stream: the session must
    /// have been started, not ended, not expired, and the account must not be deleted.
    ///
    /// The state is the stream's latest (the newest state at hand, kept in memory or in the details
    /// cache, brought up to date with the events after it), so a session started or ended on
    /// another server counts at once.
    ///
    /// - Parameter token: The bearer token, `<account id>.<secret>`.
    /// - Returns: The account's state, with the session among its open ones.
    /// - Throws: ``AccountStoreError/invalidSession`` for anything else (a malformed token too).
    public func authenticate(token: String) async throws -> AccountState {
        try await sessions.authenticate(token: token)
    }

    /// Ends the session of a bearer token (`auth.session-ended` with reason `logout`, then
    /// `auth.logged-out`).
    ///
    /// - Parameters:
    ///   - token: The bearer token of the session to end.
    ///   - context: Who asks, recorded with the events.
    /// - Throws: ``AccountStoreError/invalidSession`` when the token signs nothing in.
    public func endSession(token: String, context: Context = Context()) async throws {
        try await sessions.end(token: token, context: context)
    }

    /// The account a bearer token names (nil for a malformed token), whether or not its session
    /// is valid.
    ///
    /// - Parameter token: A bearer token.
    /// - Returns: The part before the last dot, or nil for a malformed token: longer than 512 bytes,
    ///   without a dot, with an empty account id, or with a secret that is not 43 characters long.
    public static func accountId(ofToken token: String) -> String? {
        BearerSecret.parseSessionToken(token)?.accountId
    }

    /// The hash a session's events carry for a bearer token (nil for a malformed token): how a
    /// reader of the log recognizes the `auth.session-ended` of its own session.
    ///
    /// - Parameter token: A bearer token.
    /// - Returns: The SHA-256 of the token's secret in hex, or nil for a malformed token.
    public static func sessionHash(ofToken token: String) -> String? {
        BearerSecret.parseSessionToken(token)?.sessionHash
    }

    /// The `auth.session-client` that goes beside a session's start, when `context` names a client.
    static func clientEvents(_ sessionHash: String, _ context: Context) -> [AccountEvent] {
        guard let client = context.sessionClient else { return [] }
        return [.sessionClient(sessionHash: sessionHash, address: client.address, userAgent: client.userAgent)]
    }

    /// The events that end every open session of `state`, for `reason`, in hash order.
    static func endingSessions(of state: AccountState, reason: String) -> [AccountEvent] {
        state.sessions.keys.sorted().map { .sessionEnded(sessionHash: $0, reason: reason) }
    }

    static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
