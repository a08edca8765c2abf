//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import HTTPTypes
import Hummingbird

/// API requests with a body must say `Content-Type: application/json` (415
/// `unsupported-media-type` otherwise), before any limit is counted or any byte of the body read.
///
/// A page on another site can make its visitors' browsers send "simple" requests without asking
/// this server first: bodies typed `text/plain`, `application/x-www-form-urlencoded` or
/// `multipart/form-data` (`fetch` with `mode: "no-cors"`, a form). JSON is not among them, so a
/// browser sends it cross-site only after a CORS preflight, which this server never grants. With
/// this rule no page can recruit its visitors to guess passwords, spend their addresses' limits or
/// lock them out of an account.
struct JSONBodyMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard AdminRequestGuard.hasJSONBodyOrNone(request) else { return Problem.unsupportedMediaType.response() }
        return try await next(request, context)
    }
}

extension Problem {
    static let unsupportedMediaType = Problem(
        "unsupported-media-type", .unsupportedMediaType, "Request bodies must be JSON.",
        detail: "send Content-Type: application/json with a body")
}
