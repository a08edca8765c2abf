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
        guard let (accountId, sessionHash) = BearerSecret.parseSessionToken(token) else { throw AccountStoreError.invalidSession }
        guard let state = try await currentState(of: accountId), !state.isDeleted, let expiry = state.sessions[sessionHash],
            expiry > Self.micros(options.clock())
        else {
            throw AccountStoreError.invalidSession
        }
        return state
    }

    /// Ends the session of a bearer token (`auth.session-ended` with reason `logout`, then
    /// `auth.logged-out`).
    ///
    /// - Parameters:
    ///   - token: The bearer token of the session to end.
    ///   - context: Who asks, recorded with the events.
    /// - Throws: ``AccountStoreError/invalidSession`` when the token signs nothing in.
    public func endSession(token: String, context: Context = Context()) async throws {
        let state = try await authenticate(token: token)
        guard let (_, sessionHash) = BearerSecret.parseSessionToken(token) else { throw AccountStoreError.invalidSession }
        let outcome = try await retrying(state.accountId) { current in
            guard current.sessions[sessionHash] != nil else { throw AccountStoreError.invalidSession }
            return ([.sessionEnded(sessionHash: sessionHash, reason: "logout"), .loggedOut], [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
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
    func endingSessions(of state: AccountState, reason: String) -> [AccountEvent] {
        state.sessions.keys.sorted().map { .sessionEnded(sessionHash: $0, reason: reason) }
    }

    static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension AccountStore {
    /// The account's state after every event of its stream, or nil when it has no stream (or its
    /// id could not be one). What every command and session check decides on.
    ///
    /// The newest state at hand (kept in memory, ``AccountStoreOptions/recentStates``, or else the
    /// details cache's) is brought up to date with the events after its version, read from the
    /// stream in one call (on the embedded log, usually one index lookup that finds none); only
    /// an account known to neither is folded from its first event. A command on an account with a
    /// long history (every login appends two events) so costs the same as on a new one: folding
    /// every stream from the start cost a time that grew with it. The details cache's states equal
    /// the fold of their streams (the replay tests compare them), so the result is the fold's.
    ///
    /// - Parameter accountId: The account.
    /// - Returns: The latest state, deleted accounts included, or nil.
    /// - Throws: The log's `EventLogError` when the stream cannot be read, or a decoding error.
    func currentState(of accountId: String) async throws -> AccountState? {
        guard AccountLog.couldBeStream(accountId) else { return nil }
        // A kept state never needs the details cache's (which costs a read, a seal opened and a
        // decoding): the events after it are read either way.
        let kept = recentStates.state(of: accountId)
        let state = try await accounts.load(accountId, after: try kept ?? cachedState(of: accountId))
        if let state, !state.isDeleted {
            if state.version != kept?.version { recentStates.keep(state) }
        } else if kept != nil {
            // A deleted account's personal data does not stay in memory (crypto-shredding).
            recentStates.forget(accountId)
        }
        return state
    }

    /// `render` applied to the account details of `state` (``details(from:)``), made once for
    /// each version of an account's state and kept in memory beside it
    /// (``AccountStoreOptions/recentStates``): a server that answers the same account many times
    /// encodes its details once for each change, not for every request.
    ///
    /// The rendering is kept only while `state` is the newest state the store has seen of its
    /// account, and goes with it: when the account changes, and when it is deleted (its personal
    /// data does not stay in memory). With `recentStates` at 0 nothing is kept.
    ///
    /// - Parameters:
    ///   - state: The account's state, as a session check or command returned it.
    ///   - name: What the rendering is (one name for each kind a caller makes).
    ///   - render: Makes the rendering from the details.
    /// - Returns: The rendering.
    /// - Throws: What ``details(from:)`` or `render` throws.
    public func rendering<Value: Sendable>(
        of state: AccountState, as name: String, _ render: (AccountDetails) throws -> Value
    ) throws -> Value {
        if let kept = recentStates.rendering(of: state, as: name, Value.self) { return kept }
        let value = try render(try details(from: state))
        recentStates.keep(value, as: name, of: state)
        return value
    }
}
