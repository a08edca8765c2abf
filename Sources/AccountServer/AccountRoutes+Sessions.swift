//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Hummingbird
import SpeziAccountStore

extension AccountRoutes {
    /// `GET /v1/account/sessions`: the caller's open sessions, newest first (at most
    /// `AccountStore.maxListedSessions`, the caller's own always among them). Each list walks the
    /// account's stream, so lists count against the account's history-page limit.
    func listSessions(_ session: SignedInAccount) async throws -> Response {
        let state = session.state
        try limit("history-account", state.accountId, configuration.rateLimits.historyPagesPerAccount)
        let own = AccountStore.sessionHash(ofToken: session.token)
        let list = try await store.openSessions(of: state.accountId, including: own)
        return try Self.json(SessionListBody(list, current: own))
    }

    /// `DELETE /v1/account/sessions/{id}`: ends one of the caller's open sessions (its own too).
    /// An id that is not an open session of the caller's account, another account's included,
    /// answers 404 `no-such-session`.
    func endListedSession(_ request: Request, _ session: SignedInAccount) async throws -> Response {
        let state = session.state
        guard let id = request.uri.path.split(separator: "/").last.map(String.init), state.sessions[id] != nil,
            try await store.endSession(id: id, of: state.accountId, context: context(request, actor: state.accountId))
        else {
            throw Problem.noSuchSession
        }
        logger.info("session ended by its owner", metadata: ["account": "\(state.accountId)"])
        return Response(status: .noContent)
    }
}

extension AdminRoutes {
    /// `GET /admin/api/accounts/{id}/sessions`: the account's open sessions, with where each was
    /// opened from (personal data: the listing is recorded in the audit stream first).
    func listSessions(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$") else { throw Problem.noSuchAccount }
        let list: OpenSessionList
        do {
            list = try await store.openSessions(of: accountId)
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        try await store.recordAdminAction(.sessionsViewed(accountId: accountId), by: context.admin, correlationID: correlation(request))
        return try AccountRoutes.json(SessionListBody(list, current: nil))
    }

    /// `DELETE /admin/api/accounts/{id}/sessions/{sessionId}`: ends one open session of the account,
    /// `auth.session-ended` with the administrator (`admin:<name>`) as its actor; 404 for a session
    /// that is not open, or an account that does not exist.
    func endSession(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$"), let sessionId = context.parameters.get("sessionId")
        else { throw Problem.noSuchAccount }
        let ended = try await onAccount { try await store.endSession(id: sessionId, of: accountId, context: commandContext(request, context)) }
        guard ended else { throw Problem.noSuchSession }
        logger.notice("session ended by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        return Response(status: .noContent)
    }
}

extension Problem {
    static let noSuchSession = Problem("no-such-session", .notFound, "No open session of this account has this id.")
}
