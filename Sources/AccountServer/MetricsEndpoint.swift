//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import SpeziAccountStore

/// `GET /metrics`: what the process's metrics backend holds, in the text form a scraper reads, for
/// whoever presents the bearer token. The server knows no metrics backend: the program that
/// bootstraps one (`accountctl serve --metrics-token-file` bootstraps swift-prometheus) hands
/// over how to render it.
public struct MetricsEndpoint: Sendable {
    /// The token a scraper sends as `Authorization: Bearer <token>` (16 characters or more).
    public var bearerToken: String
    /// The content type of what ``render`` returns.
    public var contentType: String
    /// The current metrics, rendered.
    public var render: @Sendable () -> [UInt8]

    /// - Parameters:
    ///   - bearerToken: The scraper's token, 16 characters or more.
    ///   - contentType: The content type of the rendering (Prometheus' text format by default).
    ///   - render: Renders the current metrics.
    public init(
        bearerToken: String, contentType: String = "text/plain; version=0.0.4; charset=utf-8", render: @escaping @Sendable () -> [UInt8]
    ) {
        self.bearerToken = bearerToken
        self.contentType = contentType
        self.render = render
    }
}

/// Serves ``MetricsEndpoint``: the token compared by its SHA-256 in constant time; a wrong or
/// missing one answers 401 and counts against the client's allowance of credential tries (the
/// admin's: ``RateLimits/adminAttemptsPerClient``), so the token cannot be guessed quickly.
struct MetricsRoute: Sendable {
    let endpoint: MetricsEndpoint
    let limiter: RateLimiter
    let attempts: RateLimit
    private let tokenDigest: [UInt8]

    init(endpoint: MetricsEndpoint, attempts: RateLimit) {
        self.endpoint = endpoint
        self.limiter = RateLimiter(name: "metrics")
        self.attempts = attempts
        self.tokenDigest = Array(SHA256.hash(data: Data(endpoint.bearerToken.utf8)))
    }

    func register<Context: AccountRequestContext>(on router: Router<Context>) {
        router.get("/metrics") { request, context in
            try answer(request, client: context.client)
        }
    }

    func answer(_ request: Request, client: String) throws -> Response {
        guard presentsToken(request) else {
            if let wait = limiter.take("metrics-client:\(client)", limit: attempts) {
                return Problem.rateLimited(retryAfter: wait).response()
            }
            var response = Problem("unauthorized", .unauthorized, "The metrics need their bearer token.").response()
            response.headers[.wwwAuthenticate] = #"Bearer realm="metrics""#
            return response
        }
        var headers = HTTPFields()
        headers[.contentType] = endpoint.contentType
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: endpoint.render())))
    }

    private func presentsToken(_ request: Request) -> Bool {
        guard let header = request.headers[.authorization], header.utf8.count <= 1_024, header.hasPrefix("Bearer ") else { return false }
        let digest = Array(SHA256.hash(data: Data(header.dropFirst("Bearer ".count).utf8)))
        return PasswordHasher.constantTimeEquals(digest, tokenDigest)
    }
}

/// Refuses a method outside HTTP's registered ones before the metrics middleware sees the
/// request, as no route takes it (``RouteFallbackMiddleware`` answers 405 with `Allow`, or 404):
/// the metrics label requests by method, and every such method would otherwise be a series of
/// its own, held for the process's life.
struct KnownMethodsMiddleware<Context: RequestContext>: RouterMiddleware {
    static var known: Set<HTTPRequest.Method> { [.get, .head, .post, .put, .delete, .patch, .options, .trace, .connect] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.known.contains(request.method) else { throw HTTPError(.notFound) }
        return try await next(request, context)
    }
}
