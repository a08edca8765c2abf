//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// The sessions of the accounts: checking a bearer token against its account's stream, listing an
/// account's open sessions with where they were opened from, and ending one. A session is opened
/// by the command that signs in (a login, a signup, an identity sign-in) in the same append as
/// that command's events; from then on this book answers for it. It keeps no state of its own
/// outside the log: a session is open while its account's fold says so, on every server.
/// ``AccountStore/authenticate(token:)``, ``AccountStore/endSession(token:context:)``,
/// ``AccountStore/openSessions(of:including:)`` and ``AccountStore/endSession(id:of:context:)``
/// are its public doors.
struct SessionBook: Sendable {
    let core: any AccountCommandCore

    /// The account a bearer token signs in: started, not ended, not expired, account not deleted.
    func authenticate(token: String) async throws -> AccountState {
        guard let (accountId, sessionHash) = BearerSecret.parseSessionToken(token) else { throw AccountStoreError.invalidSession }
        guard let state = try await core.currentState(of: accountId), !state.isDeleted, let expiry = state.sessions[sessionHash],
            expiry > AccountState.micros(core.now())
        else {
            throw AccountStoreError.invalidSession
        }
        return state
    }

    /// Ends the session of a bearer token (`auth.session-ended` with reason `logout`, then `auth.logged-out`).
    func end(token: String, context: AccountStore.Context) async throws {
        let state = try await authenticate(token: token)
        guard let (_, sessionHash) = BearerSecret.parseSessionToken(token) else { throw AccountStoreError.invalidSession }
        let outcome = try await core.retrying(state.accountId, keyed: nil) { current in
            guard current.sessions[sessionHash] != nil else { throw AccountStoreError.invalidSession }
            return ([.sessionEnded(sessionHash: sessionHash, reason: "logout"), .loggedOut], [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await core.awaitCache(position) }
    }

    /// The account's open sessions, newest first, at most ``AccountStore/maxListedSessions`` (with
    /// `including` among them when it is open).
    func list(of accountId: String, including: String?) async throws -> OpenSessionList {
        guard let state = try await core.currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
        let now = AccountState.micros(core.now())
        let open = state.sessions.filter { $0.value > now }
        // When, and at which stream version (what orders sessions opened at the same time).
        var opened: [String: (time: Date, version: UInt64)] = [:]
        var clients: [String: SessionClient] = [:]
        var next: UInt64 = 1
        while next <= state.version, opened.count < open.count || clients.count < open.count {
            let batch = try await core.accounts.log.readStream(accountId, from: next, limit: 512)
            guard let last = batch.last else { break }
            for record in batch where record.streamVersion <= state.version {
                switch record.type {
                case "auth.session-started":
                    guard case let .sessionStarted(hash, _) = try core.accounts.event(from: record), open[hash] != nil else { continue }
                    opened[hash] = (record.timestamp, record.streamVersion)
                case "auth.session-client":
                    guard case let .sessionClient(hash, address, userAgent) = try core.accounts.event(from: record), open[hash] != nil else {
                        continue
                    }
                    clients[hash] = SessionClient(address: address, userAgent: userAgent)
                default:
                    continue
                }
            }
            next = last.streamVersion + 1
        }
        let all = open.map { hash, expiry in
            (
                version: opened[hash]?.version ?? 0,
                session: OpenSession(
                    id: hash, openedAt: opened[hash]?.time ?? state.createdAt,
                    expiresAt: Date(timeIntervalSince1970: Double(expiry) / 1_000_000), client: clients[hash])
            )
        }
        .sorted { ($0.version, $0.session.id) > ($1.version, $1.session.id) }.map(\.session)
        var listed = Array(all.prefix(AccountStore.maxListedSessions))
        if let including, !listed.contains(where: { $0.id == including }), let own = all.first(where: { $0.id == including }) {
            listed[listed.count - 1] = own
        }
        return OpenSessionList(sessions: listed, total: all.count)
    }

    /// Ends every open session of the account (`auth.session-ended` with reason `revoked` for
    /// each, in one append); returns how many were open.
    func endAll(of accountId: String, context: AccountStore.Context) async throws -> Int {
        let now = AccountState.micros(core.now())
        var ended = 0
        let outcome = try await core.retrying(accountId, keyed: nil) { current in
            let open = current.sessions.filter { $0.value > now }.keys.sorted()
            ended = open.count
            return (open.map { .sessionEnded(sessionHash: $0, reason: "revoked") }, [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await core.awaitCache(position) }
        return ended
    }

    /// Ends one open session of the account (`auth.session-ended` with reason `revoked`); false
    /// when `id` is not an open session of it.
    func end(id: String, of accountId: String, context: AccountStore.Context) async throws -> Bool {
        let now = AccountState.micros(core.now())
        var found = false
        let outcome = try await core.retrying(accountId, keyed: nil) { current in
            guard let expiry = current.sessions[id], expiry > now else {
                found = false
                return ([], [], [])
            }
            found = true
            return ([.sessionEnded(sessionHash: id, reason: "revoked")], [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await core.awaitCache(position) }
        return found
    }
}
