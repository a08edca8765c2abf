//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
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
        let ended: Bool
        do {
            ended = try await store.endSession(
                id: sessionId, of: accountId, context: AccountStore.Context(actor: "admin:\(context.admin)", correlationID: correlation(request)))
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        guard ended else { throw Problem.noSuchSession }
        logger.notice("session ended by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        return Response(status: .noContent)
    }
}

extension AdminRoutes {
    /// `DELETE /admin/api/accounts/{id}/sessions`: ends every open session of the account
    /// (`auth.session-ended`, reason `revoked`, actor `admin:<name>`), recorded as
    /// `admin.sessions-ended`; answers how many were ended.
    func endAllSessions(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$"), !accountId.containsNUL else { throw Problem.noSuchAccount }
        let correlationID = correlation(request)
        let ended: Int
        do {
            ended = try await store.endAllSessions(
                of: accountId, context: AccountStore.Context(actor: "admin:\(context.admin)", correlationID: correlationID))
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        try await store.recordAdminAction(.sessionsEnded(accountId: accountId, count: UInt64(ended)), by: context.admin, correlationID: correlationID)
        logger.notice(
            "all sessions ended by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)", "ended": "\(ended)"])
        return try AccountRoutes.json(["ended": ended])
    }

    /// `POST /admin/api/accounts/{id}/erase` with `{"reason"}`: erases the account on request —
    /// deleted as its owner would delete it (its sessions end, its identities and user id are
    /// released, its key is destroyed, actor `admin:<name>`) — and records `admin.account-erased`
    /// with the reason in the audit stream. The deletion is the commitment: once it is in the log
    /// the answer is 204, and a failure to record the audit entry after it is logged as an error.
    func erase(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$"), !accountId.containsNUL else { throw Problem.noSuchAccount }
        let reason = try await reasonBody(request)
        let correlationID = correlation(request)
        guard !accountId.containsNUL, let state = try await store.accounts.load(accountId), !state.isDeleted else { throw Problem.noSuchAccount }
        do {
            try await store.delete(accountId, context: AccountStore.Context(actor: "admin:\(context.admin)", correlationID: correlationID))
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        do {
            try await store.recordAdminAction(
                .accountErased(accountId: accountId, reason: reason), by: context.admin, correlationID: correlationID)
        } catch {
            logger.error(
                "an erasure is done, but its reason could not be recorded", metadata: ["account": "\(accountId)", "error": "\(error)"])
        }
        logger.notice("account erased by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        return Response(status: .noContent)
    }
}

extension AdminRoutes {
    /// The `{"reason"}` of an admin action: 1 to 500 Unicode scalars, not blank; JSON only.
    func reasonBody(_ request: Request) async throws -> String {
        guard request.headers[.contentType] != nil else {
            throw Problem("unsupported-media-type", .unsupportedMediaType, "Admin requests with a body take application/json.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: 4_096)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw Problem.bodyTooLarge(4_096)
        }
        struct ReasonBody: Decodable { let reason: String }
        guard let body = try? JSONDecoder().decode(ReasonBody.self, from: Data(buffer.readableBytesView)),
            !body.reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, body.reason.unicodeScalars.count <= 500
        else {
            throw Problem.malformed("the body must be {\"reason\": \"...\"}, a reason of 1 to 500 characters")
        }
        return body.reason
    }

    /// `POST /admin/api/accounts/{id}/disable` with `{"reason"}`: the account's sessions end and it
    /// cannot sign in until enabled (`account.disabled`, actor `admin:<name>`); recorded as
    /// `admin.account-disabled`. Answers how many sessions ended (0 when it was disabled already).
    func disable(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$"), !accountId.containsNUL else { throw Problem.noSuchAccount }
        let reason = try await reasonBody(request)
        let correlationID = correlation(request)
        let ended: Int?
        do {
            ended = try await store.disable(
                accountId, reason: reason, context: AccountStore.Context(actor: "admin:\(context.admin)", correlationID: correlationID))
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        if ended != nil {
            try await store.recordAdminAction(.accountDisabled(accountId: accountId, reason: reason), by: context.admin, correlationID: correlationID)
            logger.notice("account disabled by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        }
        return try AccountRoutes.json(["ended": ended ?? 0])
    }

    /// `POST /admin/api/accounts/{id}/enable` with `{"reason"}`: a disabled account can sign in
    /// again (`account.enabled`); recorded as `admin.account-enabled`. 204 (also when it was not disabled).
    func enable(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$"), !accountId.containsNUL else { throw Problem.noSuchAccount }
        let reason = try await reasonBody(request)
        let correlationID = correlation(request)
        let enabled: Bool
        do {
            enabled = try await store.enable(
                accountId, reason: reason, context: AccountStore.Context(actor: "admin:\(context.admin)", correlationID: correlationID))
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        if enabled {
            try await store.recordAdminAction(.accountEnabled(accountId: accountId, reason: reason), by: context.admin, correlationID: correlationID)
            logger.notice("account enabled by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        }
        return Response(status: .noContent)
    }
}

extension Problem {
    static let noSuchSession = Problem("no-such-session", .notFound, "No open session of this account has this id.")
}
