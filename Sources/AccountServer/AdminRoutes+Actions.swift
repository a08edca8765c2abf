//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import SpeziAccountStore

/// What an administrator does to an account: end all its sessions, disable and enable it, erase
/// it on request. Each is a command of the store with `admin:<name>` as its actor, and an
/// `admin.*` entry in the audit stream.
extension AdminRoutes {
    /// `DELETE /admin/api/accounts/{id}/sessions`: ends every open session of the account
    /// (`auth.session-ended`, reason `revoked`), recorded as `admin.sessions-ended`; answers how
    /// many were ended.
    func endAllSessions(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let accountId = try accountParameter(context)
        let commandContext = commandContext(request, context)
        let ended = try await onAccount { try await store.endAllSessions(of: accountId, context: commandContext) }
        try await store.recordAdminAction(
            .sessionsEnded(accountId: accountId, count: UInt64(ended)), by: context.admin, correlationID: commandContext.correlationID)
        logger.notice(
            "all sessions ended by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)", "ended": "\(ended)"])
        return try AccountRoutes.json(["ended": ended])
    }

    /// `POST /admin/api/accounts/{id}/erase` with `{"reason"}`: erases the account on request —
    /// deleted as its owner would delete it (its sessions end, its identities and user id are
    /// released, its key is destroyed) — and records `admin.account-erased` with the reason in the
    /// audit stream. The deletion is the commitment: once it is in the log the answer is 204, and
    /// a failure to record the audit entry after it is logged as an error.
    func erase(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let accountId = try accountParameter(context)
        let reason = try await reasonBody(request)
        let commandContext = commandContext(request, context)
        guard let state = try await store.accounts.load(accountId), !state.isDeleted else { throw Problem.noSuchAccount }
        try await onAccount { try await store.delete(accountId, context: commandContext) }
        do {
            try await store.recordAdminAction(
                .accountErased(accountId: accountId, reason: reason), by: context.admin, correlationID: commandContext.correlationID)
        } catch {
            logger.error(
                "an erasure is done, but its reason could not be recorded", metadata: ["account": "\(accountId)", "error": "\(error)"])
        }
        logger.notice("account erased by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        return Response(status: .noContent)
    }

    /// `POST /admin/api/accounts/{id}/disable` with `{"reason"}`: the account's sessions end and it
    /// cannot sign in until enabled (`account.disabled`); recorded as `admin.account-disabled`.
    /// Answers how many sessions ended (0 when it was disabled already).
    func disable(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let accountId = try accountParameter(context)
        let reason = try await reasonBody(request)
        let commandContext = commandContext(request, context)
        let ended = try await onAccount { try await store.disable(accountId, reason: reason, context: commandContext) }
        if ended != nil {
            try await store.recordAdminAction(
                .accountDisabled(accountId: accountId, reason: reason), by: context.admin, correlationID: commandContext.correlationID)
            logger.notice("account disabled by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        }
        return try AccountRoutes.json(["ended": ended ?? 0])
    }

    /// `POST /admin/api/accounts/{id}/enable` with `{"reason"}`: a disabled account can sign in
    /// again (`account.enabled`); recorded as `admin.account-enabled`. 204 (also when it was not disabled).
    func enable(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let accountId = try accountParameter(context)
        let reason = try await reasonBody(request)
        let commandContext = commandContext(request, context)
        if try await onAccount({ try await store.enable(accountId, reason: reason, context: commandContext) }) {
            try await store.recordAdminAction(
                .accountEnabled(accountId: accountId, reason: reason), by: context.admin, correlationID: commandContext.correlationID)
            logger.notice("account enabled by an administrator", metadata: ["account": "\(accountId)", "admin": "\(context.admin)"])
        }
        return Response(status: .noContent)
    }
}

extension AdminRoutes {
    /// The account the route's `{id}` names; 404 for one of the store's own streams (`$…`) or an id with a NUL.
    func accountParameter(_ context: AdminRequestContext) throws -> String {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$"), !accountId.containsNUL else { throw Problem.noSuchAccount }
        return accountId
    }

    /// The store context of an administrator's command: `admin:<name>` as its actor, the request's
    /// correlation id.
    func commandContext(_ request: Request, _ context: AdminRequestContext) -> AccountStore.Context {
        AccountStore.Context(actor: "admin:\(context.admin)", correlationID: correlation(request))
    }

    /// Runs a command of the store on one account; an unknown or deleted account is 404.
    func onAccount<T>(_ command: () async throws -> T) async throws -> T {
        do {
            return try await command()
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
    }

    /// The body of an admin request that carries one: JSON (the guard refused other content
    /// types; a body needs this one), at most 4 KiB.
    func jsonBody(_ request: Request) async throws -> Data {
        guard request.headers[.contentType] != nil else {
            throw Problem("unsupported-media-type", .unsupportedMediaType, "Admin requests with a body take application/json.")
        }
        do {
            return Data(try await request.body.collect(upTo: 4_096).readableBytesView)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw Problem.bodyTooLarge(4_096)
        }
    }

    /// The `{"reason"}` of an admin action: 1 to 500 Unicode scalars, not blank.
    func reasonBody(_ request: Request) async throws -> String {
        struct ReasonBody: Decodable { let reason: String }
        guard let body = try? JSONDecoder().decode(ReasonBody.self, from: try await jsonBody(request)),
            !body.reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, body.reason.unicodeScalars.count <= 500
        else {
            throw Problem.malformed("the body must be {\"reason\": \"...\"}, a reason of 1 to 500 characters")
        }
        return body.reason
    }
}
