//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Projections
import SpeziAccountStore

/// The audit console's JSON API under `/admin/api/`: finding an account, its history, activity
/// over time, the log's and the projections' state, verify and rebuild as jobs, and the audit
/// stream itself. Every route needs an admin session cookie (opened by the sign-in form,
/// `POST /admin/api/session`) or, for scripts, the admin credential as HTTP Basic; without one the
/// answer is 401 and nothing else. The console's page and the session routes are open. Every
/// request first passes ``AdminRequestGuard`` (same origin only, JSON bodies only). Opening a
/// history, verifying and rebuilding are recorded in the store's audit stream with the
/// administrator's name.
struct AdminRoutes: Sendable {
    let store: AccountStore
    let sessions: AdminSessions
    let console: AdminConsole
    let attempts: AdminAttempts
    let heartbeat: Duration
    /// The server's logger; in the copy a route's handler gets, the request's `context.logger`.
    var logger: Logger
    /// The request's id (``RequestIdentity``) in the copy a route's handler gets; nil otherwise.
    var requestID: String?
    let jobs = AdminJobs()

    /// One route of the console: ``Route/Access/open`` for the page and signing in and out, a
    /// required admin session for the rest.
    typealias AdminRoute = Route<AdminRoutes, AdminRequestContext>

    static let table: [AdminRoute] = [
        AdminRoute(.post, "/admin/api/session", access: .open) { routes, request, context in try await routes.signIn(request, context) },
        AdminRoute(.delete, "/admin/api/session", access: .open) { routes, request, _ in routes.signOut(request) },
        AdminRoute(.get, "/admin/api/whoami", access: .session) { _, _, context in try AccountRoutes.json(["admin": context.admin]) },
        AdminRoute(.get, "/admin/api/accounts", access: .session) { routes, request, _ in try await routes.find(request) },
        AdminRoute(.get, "/admin/api/accounts/:id", access: .session) { routes, _, context in try await routes.summary(context) },
        AdminRoute(.get, "/admin/api/accounts/:id/history", access: .session) { routes, request, context in
            try await routes.history(request, context)
        },
        AdminRoute(.get, "/admin/api/accounts/:id/sessions", access: .session) { routes, request, context in
            try await routes.listSessions(request, context)
        },
        AdminRoute(.delete, "/admin/api/accounts/:id/sessions/:sessionId", access: .session) { routes, request, context in
            try await routes.endSession(request, context)
        },
        AdminRoute(.delete, "/admin/api/accounts/:id/sessions", access: .session) { routes, request, context in
            try await routes.endAllSessions(request, context)
        },
        AdminRoute(.post, "/admin/api/accounts/:id/erase", access: .session) { routes, request, context in
            try await routes.erase(request, context)
        },
        AdminRoute(.post, "/admin/api/accounts/:id/disable", access: .session) { routes, request, context in
            try await routes.disable(request, context)
        },
        AdminRoute(.post, "/admin/api/accounts/:id/enable", access: .session) { routes, request, context in
            try await routes.enable(request, context)
        },
        AdminRoute(.get, "/admin/api/webhooks", access: .session) { routes, _, _ in try await routes.listWebhooks() },
        AdminRoute(.post, "/admin/api/webhooks", access: .session) { routes, request, context in try await routes.addWebhook(request, context) },
        AdminRoute(.post, "/admin/api/webhooks/:id/pause", access: .session) { routes, request, context in
            try await routes.changeWebhook(request, context, .pause)
        },
        AdminRoute(.post, "/admin/api/webhooks/:id/resume", access: .session) { routes, request, context in
            try await routes.changeWebhook(request, context, .resume)
        },
        AdminRoute(.post, "/admin/api/webhooks/:id/replay", access: .session) { routes, request, context in
            try await routes.replayWebhook(request, context)
        },
        AdminRoute(.delete, "/admin/api/webhooks/:id", access: .session) { routes, request, context in
            try await routes.changeWebhook(request, context, .remove)
        },
        AdminRoute(.get, "/admin/api/activity", access: .session) { routes, request, _ in try await routes.activity(request) },
        AdminRoute(.get, "/admin/api/log", access: .session) { routes, _, _ in try await routes.logState() },
        AdminRoute(.get, "/admin/api/log/records", access: .session) { routes, request, _ in try await routes.records(request) },
        AdminRoute(.post, "/admin/api/verify", access: .session) { routes, request, context in try routes.verify(request, context.admin) },
        AdminRoute(.post, "/admin/api/projections/:name/rebuild", access: .session) { routes, request, context in
            try await routes.rebuild(request, context)
        },
        AdminRoute(.get, "/admin/api/jobs/:id", access: .session) { routes, _, context in try routes.job(context) },
        AdminRoute(.get, "/admin/api/audit", access: .session) { routes, _, _ in try await routes.audit() },
        AdminRoute(.get, "/admin/api/tail", access: .session) { routes, request, _ in try routes.tail(request) },
        // Hummingbird matches `/admin` and `/admin/` alike. The page holds no data: without a
        // session its script shows the sign-in form.
        AdminRoute(.get, "/admin/", access: .open) { routes, _, _ in routes.console.page() }
    ]

    /// Adds the console's routes: all behind ``AdminRequestGuard`` and ``AdminProblemMiddleware``
    /// in ``AdminRequestContext``; all but the page and the session routes behind
    /// ``AdminAuthenticator`` and ``AdminRequiredMiddleware``.
    func register(on router: Router<ServerRequestContext>) {
        let console = router.group(context: AdminRequestContext.self)
            .add(middleware: AdminRequestGuard())
            .add(middleware: AdminProblemMiddleware())
        let signedIn = console.group()
            .add(middleware: AdminAuthenticator(sessions: sessions, attempts: attempts))
            .add(middleware: AdminRequiredMiddleware())
        for route in Self.table {
            let group = route.access == .open ? console : signedIn
            group.on(RouterPath(route.path), method: route.method) { request, context in
                var request = request
                var routes = self
                routes.logger = context.logger
                routes.requestID = context.requestID
                return try await route.answer(routes, &request, context)
            }
        }
    }

    /// Without an admin credential: every route of the console answers 404 `admin-console-off`
    /// (problem details, as the OpenAPI document says), and other methods on its paths 405.
    static func registerConsoleOff(on router: Router<ServerRequestContext>) {
        for route in table {
            router.on(RouterPath(route.path), method: route.method) { _, _ in Problem.adminConsoleOff.response() }
        }
    }

    // MARK: Signing in and out

    /// `POST /admin/api/session` with `{"name", "password"}` (JSON): a session cookie, or 401.
    /// Every try counts towards the client's limit.
    private func signIn(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        try await attempts.admit(request, client: context.client, logger: context.logger)
        let body = try JSONDecoder().decode(SignInBody.self, from: try await jsonBody(request))
        guard let cookie = sessions.signIn(name: body.name, password: body.password, now: Date()) else {
            logger.notice("admin credential refused", metadata: ["client": "\(context.client)"])
            return AdminRequiredMiddleware.unauthenticated(request)
        }
        logger.notice("admin signed in", metadata: ["client": "\(context.client)"])
        var response = try AccountRoutes.json(["admin": sessions.credential.name])
        response.headers.append(HTTPField(name: .setCookie, value: cookie))
        if let device = try await sessions.deviceCookie() { response.headers.append(HTTPField(name: .setCookie, value: device)) }
        return response
    }

    /// `DELETE /admin/api/session`: the session ends here and now (its cookie is refused from then
    /// on, wherever it was copied to) and the browser is told to drop the cookie. 204 also without
    /// a session.
    private func signOut(_ request: Request) -> Response {
        var response = Response(status: .noContent)
        response.headers[.setCookie] = sessions.signOut(request, now: Date())
        return response
    }

    // MARK: Routes

    /// `?query=` an account id (deleted ones too) or a user id: the account id, or 404.
    private func find(_ request: Request) async throws -> Response {
        guard let query = request.uri.queryParameters.get("query"), !query.isEmpty, query.utf8.count <= 400 else {
            throw Problem.malformed("query must name an account id or a user id")
        }
        // A query the log cannot take as a stream id (a NUL byte) names no account id.
        if !query.hasPrefix("$"), !query.containsNUL, let version = try await store.log.streamVersion(query), version > 0 {
            // The log says whether it is deleted; the cache says only whether this node has applied it.
            let cached = try store.cachedState(of: query)
            let deleted = try await store.accounts.load(query)?.isDeleted ?? true
            return try AccountRoutes.json(FoundBody(accountId: query, deleted: deleted, applied: cached?.version == version))
        }
        guard let accountId = try await store.accounts.accountId(forUserId: query) else { throw Problem.noSuchAccount }
        let applied = try await store.log.streamVersion(accountId).map { try store.cachedState(of: accountId)?.version == $0 } ?? false
        return try AccountRoutes.json(FoundBody(accountId: accountId, deleted: false, applied: applied))
    }

    /// One page of an account's history (`limit`, 1 to 500, default 100; `cursor`, the `next` of
    /// the page before): the console loads more as the administrator asks, never the whole stream
    /// at once. Opening the history (its first page) is recorded in the audit stream.
    private func history(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let admin = context.admin
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$") else { throw Problem.noSuchAccount }
        let (after, limit) = try AccountRoutes.page(request)
        let page: AccountHistoryPage
        do {
            page = try await store.history(of: accountId, after: after, limit: limit)
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        // Recorded before the values are shown.
        if after == 0 { try await store.recordAdminAction(.historyViewed(accountId: accountId), by: admin, correlationID: correlation(request)) }
        return try AccountRoutes.json(HistoryBody(accountId: accountId, page: page))
    }

    /// Signups, deletions and failed logins per hour (`?bucket=hour`, the default, over the last
    /// `count` hours) or per day (`?bucket=day`); at most 24 × 31 buckets.
    private func activity(_ request: Request) async throws -> Response {
        let bucket = request.uri.queryParameters.get("bucket") ?? "hour"
        guard let seconds = ["hour": 3_600.0, "day": 86_400.0][bucket] else { throw Problem.malformed("bucket must be hour or day") }
        // One bound for both buckets: the OpenAPI document cannot tie a parameter's range to another's value.
        let maxCount = 24 * 31
        let count =
            try request.uri.queryParameters.get("count").map { text in
                guard let value = Int(text), (1...maxCount).contains(value) else { throw Problem.malformed("count must be 1 to \(maxCount)") }
                return value
            } ?? 24
        let series = try await ActivityScan(log: store.log, bucketSeconds: seconds, count: count).run(now: store.now())
        return try AccountRoutes.json(ActivityBody(bucket: bucket, series: series))
    }

    private func logState() async throws -> Response {
        let last = try await store.log.lastPosition()
        let head = last == 0 ? nil : try await store.log.record(at: last)?.hash.description
        let verification = try await store.lastVerification().flatMap(VerificationBody.init)
        let projections = try await store.projections.status().map(ProjectionBody.init)
        return try AccountRoutes.json(LogStateBody(records: last, headHash: head, lastVerification: verification, projections: projections))
    }

    private func verify(_ request: Request, _ admin: String) throws -> Response {
        let correlation = correlation(request)
        let store = store
        let job = jobs.start(kind: "verify", target: "log", admin: admin) { progress in
            let report = try await store.log.verify { step in progress(step.checked, step.total) }
            try await store.recordAdminAction(
                .verified(
                    intact: report.isIntact, recordsChecked: report.recordsChecked, headHash: report.headHash.description,
                    problem: report.problem?.description), by: admin, correlationID: correlation)
            return VerificationBody.summary(intact: report.isIntact, recordsChecked: report.recordsChecked, problem: report.problem?.description)
        }
        return try AccountRoutes.json(job, status: .accepted)
    }

    private func rebuild(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let admin = context.admin
        let names = try await store.projections.status().map(\.name)
        guard let name = context.parameters.get("name"), names.contains(name) else {
            throw Problem("no-such-projection", .notFound, "No projection has this name.", detail: "projections: \(names.joined(separator: ", "))")
        }
        let correlation = correlation(request)
        try await store.recordAdminAction(.rebuildStarted(projection: name), by: admin, correlationID: correlation)
        let store = store
        let job = jobs.start(kind: "rebuild", target: name, admin: admin) { progress in
            do {
                try await store.projections.rebuild(name) { done, total in progress(done, total) }
            } catch {
                try await store.recordAdminAction(.rebuildFinished(projection: name, error: "\(error)"), by: admin, correlationID: correlation)
                throw error
            }
            try await store.recordAdminAction(.rebuildFinished(projection: name, error: nil), by: admin, correlationID: correlation)
            return "rebuilt \(name)"
        }
        return try AccountRoutes.json(job, status: .accepted)
    }

    private func job(_ context: AdminRequestContext) throws -> Response {
        guard let id = context.parameters.get("id"), let job = jobs.job(id) else {
            throw Problem("no-such-job", .notFound, "No job has this id on this server.")
        }
        return try AccountRoutes.json(job)
    }

    private func audit() async throws -> Response {
        try AccountRoutes.json(try await store.adminActions(last: 200).map(AuditEntryBody.init))
    }

    /// The live tail; `Last-Event-ID` (sent by a reconnecting `EventSource`) or `?after=` picks
    /// where it resumes.
    private func tail(_ request: Request) throws -> Response {
        let resume = request.headers[.init("Last-Event-ID")!] ?? request.uri.queryParameters.get("after").map { String($0) }
        let after = try resume.map { text in
            guard let position = UInt64(text) else { throw Problem.malformed("Last-Event-ID and after must be a log position") }
            return position
        }
        // A tail opened with a session cookie ends once that session is signed out or expires.
        let sessions = sessions
        let bySession = sessions.session(of: request, now: Date()) != nil
        return AdminTail(
            store: store, after: after, backlog: 20, heartbeat: heartbeat, lifetime: sessions.validity,
            stillSignedIn: { !bySession || sessions.isStillValid(request, now: Date()) }, logger: logger
        ).response()
    }

    /// `GET /admin/api/log/records?after=N&limit=M`: the records after position `N` (0: from the
    /// start), at most `M` (1–1,000, 500 by default), each as the tail sends it (no payload, so
    /// no personal data), with `next`, the position to ask after next time (a follower's
    /// checkpoint), and the log's `head`.
    private func records(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        guard let after = UInt64(query.get("after").map { String($0) } ?? "0") else {
            throw Problem.malformed("after must be a log position (0 or more)")
        }
        guard let limit = Int(query.get("limit").map { String($0) } ?? "500"), (1...1_000).contains(limit) else {
            throw Problem.malformed("limit must be between 1 and 1000")
        }
        let head = try await store.log.lastPosition()
        let records = after >= head ? [] : try await store.log.read(from: after + 1, limit: limit)
        return try AccountRoutes.json(
            LogRecordsBody(records: records.map(AdminTail.Entry.init), next: records.last?.position ?? min(after, head), head: head))
    }

    /// The client's `X-Request-ID`, else the request's own id (``RequestIdentity``).
    func correlation(_ request: Request) -> String? {
        request.headers[RequestIdentity.header].map { String($0.prefix(128)) } ?? requestID
    }
}

extension Problem {
    static let adminConsoleOff = Problem(
        "admin-console-off", .notFound, "This server has no audit console: it was started without an admin credential.")

    static let noSuchAccount = Problem("no-such-account", .notFound, "No account has this id or user id.")
}

/// The sign-in form's body.
struct SignInBody: Decodable {
    let name: String
    let password: String
}
