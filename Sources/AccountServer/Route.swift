//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import HTTPTypes
import Hummingbird

/// A method and a path the router answers (`:name` for a parameter segment).
struct RoutePattern: Sendable, Equatable {
    let method: HTTPRequest.Method
    let path: String

    /// The path as the OpenAPI document writes it: `{name}` for the router's `:name`.
    var openAPIPath: String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
            .joined(separator: "/")
    }
}

/// One route of the server, of the API or of the audit console: its method and path, what runs
/// before its handler, and the handler.
///
/// The API's table (``AccountRoutes/operationTable``) and the console's (``AdminRoutes/table``) are
/// lists of routes, and everything else is derived from them: the router's registrations (each
/// table behind its own middleware), the methods ``RouteFallbackMiddleware`` names in `Allow`, and
/// ``AccountServer/operations``, which a test compares with `openapi.yaml`.
struct Route<Owner: Sendable, HandlerContext>: Sendable {
    /// Who may reach the handler.
    enum Access: Sendable, Equatable {
        /// Anyone: the handler decides what it needs.
        case open
        /// The table's session check runs first: the API's bearer session
        /// (``AccountSessionAuthenticator``; the handler asks for the session it found), the
        /// console's admin session (required: 401 without one).
        case session
    }

    /// The method and path.
    let pattern: RoutePattern
    /// The per-client limits the request counts against before the handler runs
    /// (``ClientRateLimitMiddleware``; the API's routes only).
    let limits: [ClientRateLimitKind]
    /// Who may reach the handler.
    let access: Access
    /// Gets the table's owner (the routes' shared state), the request and its context.
    let answer: @Sendable (Owner, inout Request, HandlerContext) async throws -> Response

    init(
        _ method: HTTPRequest.Method, _ path: String, limits: [ClientRateLimitKind] = [], access: Access,
        answer: @escaping @Sendable (Owner, inout Request, HandlerContext) async throws -> Response
    ) {
        self.pattern = RoutePattern(method: method, path: path)
        self.limits = limits
        self.access = access
        self.answer = answer
    }

    /// The method.
    var method: HTTPRequest.Method { pattern.method }
    /// The path, `:name` for a parameter.
    var path: String { pattern.path }
}
