//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import Logging
import SpeziAccountStore

/// What a route throws, answered as problem details (RFC 9457): a ``Problem`` as it is, the
/// store's and the services' errors by ``Problem/from(_:now:)``, a write that committed but is
/// not applied here yet as `202 accepted` (never as failed), a body past the limit as 413, and
/// anything else as a logged `500 internal-error` that shows nothing of the error.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {

    let maxBodyBytes: Int
    let now: @Sendable () -> Date
    /// Makes the receipt a `202 accepted` answer carries; nil: none.
    var receipts: PositionReceipts?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let logger = context.logger
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError where error.status != .contentTooLarge {
            // The router's own answers (no route, another method) are ``RouteFallbackMiddleware``'s.
            throw error
        } catch let AccountStoreError.committedNotApplied(position, reason) {
            // Done, but this node cannot show it yet: never answered as failed.
            logger.warning("answered 202: committed, not yet applied here", metadata: ["position": "\(position)", "reason": "\(reason)"])
            let receipt: String?
            do {
                receipt = try await receipts?.receipt(for: position)
            } catch {
                logger.error("no receipt for an accepted write", metadata: ["position": "\(position)", "error": "\(error)"])
                receipt = nil
            }
            return AccountRoutes.accepted(position: position, receipt: receipt)
        } catch {
            return answer(error, route: "\(request.method) \(context.endpointPath ?? "unmatched")", logger: logger)
        }
    }

    func answer(_ error: any Error, route: String, logger: Logger) -> Response {
        switch error {
        case let error as any HTTPResponseError where error.status == .contentTooLarge:
            // The body passed maxBodyBytes while it was collected.
            return Problem.bodyTooLarge(maxBodyBytes).response()
        case let error where Problem.isMalformedFraming(error):
            return Problem.malformedFraming.response()
        case let AccountStoreError.committedNotApplied(position, reason):
            // Done, but this node cannot show it yet: never answered as failed.
            logger.warning("answered 202: committed, not yet applied here", metadata: ["position": "\(position)", "reason": "\(reason)"])
            return AccountRoutes.accepted(position: position, receipt: nil)
        default:
            guard let problem = Problem.from(error, now: now()) else {
                logger.error("request failed", metadata: ["route": "\(route)", "error": "\(String(reflecting: error))"])
                return Problem.internalError.response()
            }
            if problem.status == 503 && isTransientFailure(error) {
                logger.warning("answered 503: the log cannot be reached", metadata: ["route": "\(route)", "error": "\(error)"])
            }
            return problem.response()
        }
    }
}

/// One line per request: its method, its route (the pattern, `/admin/api/accounts/:id/history`,
/// never the path: no ids, no tokens), the status and the time taken. Outermost, so that it sees
/// the answer every other middleware gave, 404s and 405s included. It logs with `context.logger`,
/// so its line carries the request's id (``RequestIdentityMiddleware`` runs before it).
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let logger = context.logger
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        // Hundredths of a millisecond, printed without a formatter (this runs for every request).
        let hundredths = elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
        let fraction = hundredths % 100
        logger.info(
            "request",
            metadata: [
                "method": "\(request.method)", "route": "\(context.endpointPath ?? "unmatched")", "status": "\(response.status.code)",
                "ms": "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
            ])
        return response
    }
}
