//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import HummingbirdAuth
import Logging

/// The administrator a console request is signed in as.
struct SignedInAdmin: Sendable {
    /// The admin credential's name, recorded with every action in the audit stream.
    let name: String
}

/// The context of the audit console's routes: the server's context (made from it by Hummingbird's
/// `group(_:context:)`) plus the signed-in administrator, set by ``AdminAuthenticator``.
struct AdminRequestContext: ChildRequestContext, AuthRequestContext {
    var coreContext: CoreRequestContextStorage
    /// Who the per-client limits count the request for (see ``ServerRequestContext/client``).
    let client: String
    var identity: SignedInAdmin?

    /// The signed-in administrator's name; "" on the routes open without a session.
    var admin: String { identity?.name ?? "" }

    init(context: ServerRequestContext) {
        coreContext = context.coreContext
        client = context.client
    }
}

/// A hummingbird-auth authenticator for the console: an admin session cookie, or, for scripts, the
/// admin credential as HTTP Basic. Each presentation of the credential counts towards the client's
/// limit (429 beyond it), so guessing the password is slow; requests within a session do not.
/// Without either, or with a wrong credential, the identity stays nil and
/// ``AdminRequiredMiddleware`` answers 401.
struct AdminAuthenticator: AuthenticatorMiddleware {
    typealias Context = AdminRequestContext

    let sessions: AdminSessions
    let attempts: AdminAttempts

    func authenticate(request: Request, context: Context) async throws -> SignedInAdmin? {
        if let name = sessions.session(of: request, now: Date()) { return SignedInAdmin(name: name) }
        guard AdminSessions.presentsBasic(request) else { return nil }
        try await attempts.admit(request, client: context.client, logger: context.logger)
        guard let name = sessions.basic(request) else {
            context.logger.notice("admin credential refused", metadata: ["client": "\(context.client)"])
            return nil
        }
        return SignedInAdmin(name: name)
    }
}

/// What each presentation of the admin credential (the sign-in form, HTTP Basic) spends: one of
/// its address's allowance (``RateLimits/adminAttemptsPerClient``) and, unless the request comes
/// from a browser that signed in before (``AdminSessions``' device cookie), one of the allowance
/// that every address shares (``RateLimits/adminAttemptsOverall``): guesses spread over many
/// addresses are bounded too, and the administrator's own browser is never counted among them.
struct AdminAttempts: Sendable {
    let limiter: RateLimiter
    let perClient: RateLimit
    let overall: RateLimit
    let sessions: AdminSessions

    /// Counts one presentation of the credential, or throws 429 `rate-limited` beyond a limit
    /// (the server-wide one logged with `logger`, the request's).
    func admit(_ request: Request, client: String, logger: Logger) async throws {
        if let wait = limiter.take("admin-client:\(client)", limit: perClient) {
            throw Problem("rate-limited", .tooManyRequests, "Too many requests: wait before trying again.", retryAfter: wait)
        }
        if try await sessions.presentsKnownDevice(request) { return }
        if let wait = limiter.take("admin-all", limit: overall) {
            logger.notice("admin credential checks refused: the server-wide limit is reached")
            throw Problem("rate-limited", .tooManyRequests, "Too many requests: wait before trying again.", retryAfter: wait)
        }
    }
}

/// 401 `admin-unauthenticated` unless ``AdminAuthenticator`` found an administrator. Scripts (no
/// `Sec-Fetch-*` header) are told to use HTTP Basic; a browser is not, so that it shows no
/// password prompt of its own: the console's page has the sign-in form.
struct AdminRequiredMiddleware: RouterMiddleware {
    typealias Context = AdminRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard context.identity != nil else { return Self.unauthenticated(request) }
        return try await next(request, context)
    }

    static func unauthenticated(_ request: Request) -> Response {
        var response = Problem("admin-unauthenticated", .unauthorized, "The admin credential is required.").response()
        let browser = request.headers[AdminRequestGuard.secFetchSite] != nil || request.headers[.init("Sec-Fetch-Mode")!] != nil
        response.headers[.wwwAuthenticate] =
            browser
            ? #"AdminSession realm="spezi-account-store admin", form="/admin/""# : #"Basic realm="spezi-account-store admin", charset="UTF-8""#
        return response
    }
}

/// The console's answers: what a route throws becomes problem details (an unexpected error is
/// logged by its type only at error level, since its description may quote the admin's input),
/// and nothing the console answers is cached.
struct AdminProblemMiddleware: RouterMiddleware {
    typealias Context = AdminRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let logger = context.logger
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error where Problem.isMalformedFraming(error) {
            response = Problem.malformedFraming.response()
        } catch {
            if let problem = Problem.from(error) {
                response = problem.response()
            } else {
                // The route's pattern, not its path (which holds the client's text).
                let route = "\(request.method) \(context.endpointPath ?? "admin")"
                logger.error("admin request failed", metadata: ["route": "\(route)", "errorType": "\(type(of: error))"])
                logger.debug("admin request failed", metadata: ["route": "\(route)", "error": "\(String(reflecting: error))"])
                response = Problem.internalError.response()
            }
        }
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
