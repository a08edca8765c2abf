//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The checks every request under `/admin` passes before its credential is looked at
/// (OWASP's CSRF prevention cheat sheet: fetch metadata, then the `Origin` against the host):
///
/// - **Same origin only.** A request is the console's own when `Sec-Fetch-Site` is `same-origin`
///   or `none` (typed in, a bookmark); when a browser sent no `Sec-Fetch-Site`, its `Origin` must
///   name the `Host` the request went to. A request with neither header is not a browser's (a
///   script's, with HTTP Basic) and passes. Anything else (`cross-site`, `same-site`, a foreign
///   or `null` origin) is refused with 403 `cross-site-request` on every state-changing method
///   (POST, PUT, PATCH, DELETE), on everything under `/admin/api/` (the history view is recorded
///   as the admin's: a cross-site navigation to it must not be) and whenever the request carries
///   HTTP Basic credentials. Only the console's page, which holds no data, may be opened from a
///   link elsewhere.
/// - **JSON bodies only.** A state-changing request that declares a content type must declare
///   `application/json`, and one with a body must declare it: 415 `unsupported-media-type`
///   otherwise. HTML forms can send only `text/plain`, `multipart/form-data` and
///   `application/x-www-form-urlencoded` bodies.
/// - **Short path parameters.** An id, a name or a job id longer than ``maxParameterBytes`` names
///   nothing here: 404, before the store sees it.
struct AdminRequestGuard: RouterMiddleware {
    typealias Context = AdminRequestContext

    /// The longest path parameter accepted (account ids, projection names and job ids are far shorter).
    static let maxParameterBytes = 128

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let logger = context.logger
        let route = context.endpointPath ?? "admin"
        let unsafe = ![.get, .head, .options].contains(request.method)
        if !Self.isSameOrigin(request),
            unsafe || request.uri.path.hasPrefix("/admin/api/") || AdminSessions.presentsBasic(request)
        {
            // The header values are the client's: only their presence and lengths are logged.
            logger.notice(
                "admin request refused: not same-origin",
                metadata: [
                    "route": "\(request.method) \(route)", "client": "\(context.client)",
                    "secFetchSiteBytes": "\(request.headers[Self.secFetchSite]?.utf8.count ?? 0)",
                    "originBytes": "\(request.headers[.origin]?.utf8.count ?? 0)"
                ])
            return Problem.crossSiteRequest.response()
        }
        if unsafe, !Self.hasJSONBodyOrNone(request) {
            return Problem(
                "unsupported-media-type", .unsupportedMediaType, "Admin requests with a body take application/json.",
                detail: "send Content-Type: application/json, or no body"
            ).response()
        }
        if let long = context.parameters.first(where: { $0.value.utf8.count > Self.maxParameterBytes }) {
            logger.notice(
                "admin request refused: path parameter too long",
                metadata: ["route": "\(request.method) \(route)", "parameter": "\(long.key)", "bytes": "\(long.value.utf8.count)"])
            return Problem(
                "not-found", .notFound, "Nothing here has this name.", detail: "path parameters have at most \(Self.maxParameterBytes) bytes"
            ).response()
        }
        return try await next(request, context)
    }

    /// Whether a browser says the request comes from this server's own pages, or no browser sent it.
    static func isSameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[secFetchSite] {
            return site == "same-origin" || site == "none"
        }
        guard let origin = request.headers[.origin] else { return true }
        guard let host = request.head.authority, let originURL = URLComponents(string: origin), let scheme = originURL.scheme?.lowercased(),
            let originHost = originURL.host?.lowercased(), originURL.path.isEmpty
        else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        // The Host header: `name`, `name:port`, `[v6]` or `[v6]:port`.
        guard let hostURL = URLComponents(string: "\(scheme)://\(host)"), let hostName = hostURL.host?.lowercased() else { return false }
        return hostName == originHost && (hostURL.port ?? defaultPort) == (originURL.port ?? defaultPort)
    }

    /// No body and no content type, or `application/json` (parameters such as `charset` allowed).
    static func hasJSONBodyOrNone(_ request: Request) -> Bool {
        if let type = request.headers[.contentType] {
            let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return media == "application/json"
        }
        let length = request.headers[.contentLength].flatMap { Int($0) } ?? 0
        return length == 0 && request.headers[.transferEncoding] == nil
    }
}

extension Problem {
    static let crossSiteRequest = Problem(
        "cross-site-request", .forbidden, "Admin requests must come from the console's own origin.",
        detail: "refused: Sec-Fetch-Site or Origin names another site")
}
