//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import Logging
import Projections
import SpeziAccountStore

/// The audit console's JSON API under `/admin/api/`: finding an account, its history, activity
/// over time, the log's and the projections' state, verify and rebuild as jobs, and the audit
/// stream itself. Every route needs the admin credential (HTTP Basic) or an admin session cookie;
/// without one the answer is 401 and nothing else. Opening a history, verifying and rebuilding
/// are recorded in the store's audit stream with the administrator's name.
struct AdminRoutes: Sendable {
    let store: AccountStore
    let sessions: AdminSessions
    let limiter: RateLimiter
    let limit: RateLimit
    let heartbeat: Duration
    let logger: Logger
    let jobs = AdminJobs()

    typealias Handler = @Sendable (AdminRoutes, Request, ServerRequestContext, String) async throws -> Response

    static let table: [(HTTPRequest.Method, String, Handler)] =
        [
            (.get, "/admin/api/whoami", { _, _, _, admin in try AccountRoutes.json(["admin": admin]) }),
            (.get, "/admin/api/accounts", { routes, request, _, _ in try await routes.find(request) }),
            (.get, "/admin/api/accounts/:id/history", { routes, request, context, admin in try await routes.history(request, context, admin) }),
            (.get, "/admin/api/activity", { routes, request, _, _ in try await routes.activity(request) }),
            (.get, "/admin/api/log", { routes, _, _, _ in try await routes.logState() }),
            (.post, "/admin/api/verify", { routes, request, _, admin in try routes.verify(request, admin) }),
            (.post, "/admin/api/projections/:name/rebuild", { routes, request, context, admin in try await routes.rebuild(request, context, admin) }),
            (.get, "/admin/api/jobs/:id", { routes, _, context, _ in try routes.job(context) }),
            (.get, "/admin/api/audit", { routes, _, _, _ in try await routes.audit() }),
            (.get, "/admin/api/tail", { routes, request, _, _ in try routes.tail(request) }),
            // Hummingbird matches `/admin` and `/admin/` alike.
            (.get, "/admin/", { _, _, _, _ in AdminConsole.page() })
        ]

    func register(on router: Router<ServerRequestContext>) {
        for (method, path, handler) in Self.table {
            router.on(RouterPath(path), method: method) { request, context in
                await guarded(request, context, handler)
            }
        }
    }

    /// Checks the credential, then answers; problems become problem details.
    private func guarded(_ request: Request, _ context: ServerRequestContext, _ handler: Handler) async -> Response {
        let now = Date()
        let admin: String
        var cookie: String?
        if let name = sessions.session(of: request, now: now) {
            admin = name
        } else {
            // Each presentation of the credential outside a session counts towards the limit, so
            // guessing the password is slow; requests within a session do not.
            if request.headers[.authorization] != nil, let wait = limiter.take("admin-client:\(context.client)", limit: limit) {
                return Problem("rate-limited", .tooManyRequests, "Too many requests: wait before trying again.", retryAfter: wait).response()
            }
            guard let signedIn = sessions.signIn(request, now: now) else {
                if request.headers[.authorization] != nil { logger.notice("admin credential refused", metadata: ["client": "\(context.client)"]) }
                var response = Problem("admin-unauthenticated", .unauthorized, "The admin credential is required.").response()
                response.headers[.wwwAuthenticate] = #"Basic realm="spezi-account-store admin", charset="UTF-8""#
                return response
            }
            (admin, cookie) = (signedIn.admin, signedIn.cookie)
        }
        var response: Response
        do {
            response = try await handler(self, request, context, admin)
        } catch {
            if let problem = Problem.from(error) {
                response = problem.response()
            } else {
                logger.error("admin request failed", metadata: ["route": "\(request.uri.path)", "error": "\(String(reflecting: error))"])
                response = Problem.internalError.response()
            }
        }
        if let cookie { response.headers[.setCookie] = cookie }
        response.headers[.cacheControl] = "no-store"
        return response
    }

    // MARK: Routes

    /// `?query=` an account id (deleted ones too) or a user id: the account id, or 404.
    private func find(_ request: Request) async throws -> Response {
        guard let query = request.uri.queryParameters.get("query"), !query.isEmpty, query.utf8.count <= 400 else {
            throw Problem.malformed("query must name an account id or a user id")
        }
        if !query.hasPrefix("$"), let version = try await store.log.streamVersion(query), version > 0 {
            return try AccountRoutes.json(FoundBody(accountId: query, deleted: try store.cachedState(of: query)?.isDeleted ?? true))
        }
        guard let accountId = try await store.accounts.accountId(forUserId: query) else { throw Problem.noSuchAccount }
        return try AccountRoutes.json(FoundBody(accountId: accountId, deleted: false))
    }

    private func history(_ request: Request, _ context: ServerRequestContext, _ admin: String) async throws -> Response {
        guard let accountId = context.parameters.get("id"), !accountId.hasPrefix("$") else { throw Problem.noSuchAccount }
        let entries: [AccountHistoryEntry]
        do {
            entries = try await store.history(of: accountId)
        } catch AccountStoreError.accountNotFound {
            throw Problem.noSuchAccount
        }
        // Recorded before the values are shown.
        try await store.recordAdminAction(.historyViewed(accountId: accountId), by: admin, correlationID: correlation(request))
        return try AccountRoutes.json(HistoryBody(accountId: accountId, entries: entries.map(HistoryEntryBody.init)))
    }

    /// Signups, deletions and failed logins per hour (`?bucket=hour`, the default, over the last
    /// `count` hours, at most 24 × 31) or per day (`?bucket=day`, at most 366 days).
    private func activity(_ request: Request) async throws -> Response {
        let bucket = request.uri.queryParameters.get("bucket") ?? "hour"
        guard let seconds = ["hour": 3_600.0, "day": 86_400.0][bucket] else { throw Problem.malformed("bucket must be hour or day") }
        let maxCount = bucket == "hour" ? 24 * 31 : 366
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

    private func rebuild(_ request: Request, _ context: ServerRequestContext, _ admin: String) async throws -> Response {
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

    private func job(_ context: ServerRequestContext) throws -> Response {
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
        return AdminTail(store: store, after: after, backlog: 20, heartbeat: heartbeat, lifetime: sessions.validity, logger: logger).response()
    }

    private func correlation(_ request: Request) -> String? {
        request.headers[.init("X-Request-ID")!].map { String($0.prefix(128)) }
    }
}

extension Problem {
    static let noSuchAccount = Problem("no-such-account", .notFound, "No account has this id or user id.")
}
