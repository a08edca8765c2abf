//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import HTTPTypes
import Hummingbird

/// The headers every answer carries (OWASP's REST security and HTTP headers cheat sheets):
///
/// - `Cache-Control: no-store`: answers carry tokens and personal data; no cache keeps them.
/// - `X-Content-Type-Options: nosniff`: JSON is never read as a script or a page.
/// - `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'` where the answer has no
///   policy of its own (the console's page has one, with `frame-ancestors 'none'` too), and
///   `X-Frame-Options: DENY` for browsers that predate `frame-ancestors`: no page is framed.
/// - `Referrer-Policy: no-referrer`: no URL of this server leaks to another through a link.
///
/// Router middleware, registered before every route: it covers the 404 of an unknown path too.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    static var xFrameOptions: HTTPField.Name { HTTPField.Name("X-Frame-Options")! }
    static var referrerPolicy: HTTPField.Name { HTTPField.Name("Referrer-Policy")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        Self.apply(to: &response.headers)
        return response
    }

    static func apply(to headers: inout HTTPFields) {
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        if headers[.contentSecurityPolicy] == nil { headers[.contentSecurityPolicy] = "default-src 'none'; frame-ancestors 'none'" }
        headers[xFrameOptions] = "DENY"
        headers[referrerPolicy] = "no-referrer"
    }
}
