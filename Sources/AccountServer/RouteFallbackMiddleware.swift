//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import HTTPTypes
import Hummingbird

/// The router's own answers as problem details (RFC 9457), like every other error of the API:
///
/// - a path the server has, asked with a method it does not take (`TRACE /v1/sessions`), is 405
///   `method-not-allowed` with `Allow` naming the methods it takes;
/// - any other path is 404 `not-found`;
/// - any other `HTTPError` (Hummingbird's, a middleware's) keeps its status.
///
/// Router middleware: Hummingbird runs its not-found responder through the router's middleware
/// too, so this covers every request no route matched.
struct RouteFallbackMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each route's path segments (`:name` matches any one segment) and its method.
    private let routes: [(method: HTTPRequest.Method, segments: [Substring])]

    /// `routes`: the methods and paths registered on the router (``AccountServer/routePatterns``),
    /// `:name` for a parameter.
    init(routes: [RoutePattern]) {
        self.routes = routes.map { ($0.method, $0.path.split(separator: "/")) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            guard error.status == .notFound else {
                let title = error.status.reasonPhrase.isEmpty ? "The request failed." : error.status.reasonPhrase
                return Problem("http-error", error.status, title).response()
            }
            let allowed = methods(for: request.uri.path)
            guard !allowed.isEmpty else { return Problem.notFound.response() }
            let list = allowed.joined(separator: ", ")
            var response = Problem(
                "method-not-allowed", .methodNotAllowed, "This path does not take this method.", detail: "it takes \(list)"
            ).response()
            response.headers[.allow] = list
            return response
        }
    }

    /// The methods the routes take on `path`, in the order they were registered; empty when no
    /// route has this path.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        var methods: [String] = []
        for route in routes where route.segments.count == segments.count && !methods.contains(route.method.rawValue) {
            let matches = zip(route.segments, segments).allSatisfy { pattern, segment in pattern.first == ":" || pattern == segment }
            if matches { methods.append(route.method.rawValue) }
        }
        return methods
    }
}
