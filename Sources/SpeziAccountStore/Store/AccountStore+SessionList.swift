//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// Where a session was opened from, as the server saw the client: recorded sealed in
/// `auth.session-client` (``AccountStore/Context/sessionClient``).
public struct SessionClient: Sendable, Equatable {
    /// The most bytes of a user agent that are kept.
    public static let maxUserAgentBytes = 256

    /// The client's address (an IPv6 client's /64 group), possibly empty.
    public let address: String
    /// The client's `User-Agent`, cut to ``maxUserAgentBytes`` bytes (at a character's end), possibly empty.
    public let userAgent: String

    /// A client.
    ///
    /// - Parameters:
    ///   - address: The client's address as the server saw it.
    ///   - userAgent: Its `User-Agent`; longer ones are cut to ``maxUserAgentBytes`` bytes.
    public init(address: String, userAgent: String) {
        self.address = String(address.utf8.prefix(128)) ?? ""
        var agent = Substring(userAgent)
        while agent.utf8.count > Self.maxUserAgentBytes { agent = agent.dropLast() }
        self.userAgent = String(agent)
    }
}

/// One open session of an account, as its owner's session list shows it.
public struct OpenSession: Sendable, Equatable {
    /// The session's id: the SHA-256 (hex) of its bearer token's secret, as the log's
    /// `auth.session-started` and `auth.session-ended` carry it. It is not the token: knowing it
    /// signs nobody in.
    public let id: String
    /// When it was opened (the commit time of its `auth.session-started`).
    public let openedAt: Date
    /// When it stops working.
    public let expiresAt: Date
    /// Where it was opened from, when the server that opened it said so.
    public let client: SessionClient?
}

/// An account's open sessions, newest first, at most ``AccountStore/maxListedSessions``.
public struct OpenSessionList: Sendable, Equatable {
    /// The sessions listed, newest first.
    public let sessions: [OpenSession]
    /// How many sessions are open: more than listed when the list was cut.
    public let total: Int
}

extension AccountStore {
    /// The most sessions ``openSessions(of:including:)`` lists.
    public static let maxListedSessions = 100

    /// The account's open sessions (neither ended nor expired), newest first: at most
    /// ``maxListedSessions`` of them, always with `including` among them when it is open.
    ///
    /// The account's state says which sessions are open; when each was opened and from where is
    /// read from its stream, whose events are walked once in batches (only the session events are
    /// decoded): the cost grows with the stream, so a server limits how often an account asks.
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - including: A session id (``OpenSession/id``) that is listed even when the list is cut:
    ///     the caller's own.
    /// - Returns: The list, and how many sessions are open.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` for a deleted or unknown account; the
    ///   log's errors when the stream cannot be read.
    public func openSessions(of accountId: String, including: String? = nil) async throws -> OpenSessionList {
        try await sessions.list(of: accountId, including: including)
    }

    /// Ends one open session of an account (`auth.session-ended` with reason `revoked`): from the
    /// owner's session list, or an administrator's (whose name is then `context`'s actor).
    ///
    /// - Parameters:
    ///   - id: The session's id (``OpenSession/id``).
    ///   - accountId: The account it must belong to.
    ///   - context: Who asks, recorded with the event.
    /// - Returns: Whether the session was open and is now ended; false for an id that is not an
    ///   open session of this account (another account's included).
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` for a deleted or unknown account; the
    ///   log's errors.
    @discardableResult
    public func endSession(id: String, of accountId: String, context: Context = Context()) async throws -> Bool {
        try await sessions.end(id: id, of: accountId, context: context)
    }

    /// Ends every open session of an account (`auth.session-ended` with reason `revoked` for each,
    /// in one append): an administrator's action (whose name is then `context`'s actor).
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - context: Who asks, recorded with the events.
    /// - Returns: How many sessions were open and are now ended.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` for a deleted or unknown account; the log's errors.
    @discardableResult
    public func endAllSessions(of accountId: String, context: Context = Context()) async throws -> Int {
        try await sessions.endAll(of: accountId, context: context)
    }
}
