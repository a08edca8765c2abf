//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import HTTPTypes
import Hummingbird
import Logging

/// The id of one request: 32 lowercase hexadecimal digits, the trace id of a W3C `traceparent`
/// header that a trusted proxy sent, or made at random. It follows the request everywhere:
///
/// - in the metadata of `context.logger` (the key `hb.request.id`, the one Hummingbird itself uses,
///   so Hummingbird's `context.id` is this id too), and so in every line logged for the request;
/// - in the `X-Request-ID` header of the answer;
/// - in every problem document (`requestId`, and `instance` as `urn:spezi-account-store:request:<id>`);
/// - as the correlation id of the events the request appends, unless the client sent an
///   `X-Request-ID` of its own (that one is kept, as before).
///
/// A `traceparent` from anyone else is ignored: a client cannot choose the id under which its
/// request is logged.
enum RequestIdentity {
    /// The logger metadata key that holds the id.
    static let metadataKey = "hb.request.id"
    /// The answer's header that carries the id.
    static let header = HTTPField.Name("X-Request-ID")!
    /// The W3C trace context header.
    static let traceparent = HTTPField.Name("traceparent")!

    /// The id of the request the current task serves (set by ``RequestIdentityMiddleware`` around
    /// everything after it), for the answers made without the context at hand: problem documents.
    @TaskLocal static var current: String?

    /// The trace id of a well-formed `traceparent` (version `00`, or a later one read as `00`
    /// reads it), nil for anything else: a trace id or parent id of zeros, a version `ff`,
    /// uppercase digits, wrong lengths.
    static func traceID(fromTraceparent value: String) -> String? {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].utf8.count == 2, parts[1].utf8.count == 32, parts[2].utf8.count == 16, parts[3].utf8.count == 2,
            parts[0..<4].allSatisfy({ $0.utf8.allSatisfy(isLowerHex) }), parts[0] != "ff"
        else { return nil }
        // Version 00 has exactly four parts; later versions may append some.
        if parts[0] == "00" && parts.count != 4 { return nil }
        guard parts[1].utf8.contains(where: { $0 != UInt8(ascii: "0") }), parts[2].utf8.contains(where: { $0 != UInt8(ascii: "0") }) else {
            return nil
        }
        return String(parts[1])
    }

    /// A new id: 16 random bytes as hexadecimal (a valid trace id).
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex(high) + hex(low)
    }

    /// The request's id: the trusted proxy's trace id, or a new one.
    static func id(for request: Request, peer: String?, trustedProxies: [AddressBlock]) -> String {
        if let peer, trustedProxies.contains(where: { $0.contains(peer) }), let header = request.headers[traceparent],
            let traceID = traceID(fromTraceparent: header)
        {
            return traceID
        }
        return make()
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

extension RequestContext {
    /// The request's id (``RequestIdentity``), as the logger's metadata holds it.
    var requestID: String? { logger[metadataKey: RequestIdentity.metadataKey].map { "\($0)" } }
}

/// Gives each request its id (``RequestIdentity``): into `context.logger`'s metadata for every
/// middleware and route after it, into the task for the problem documents, and into the answer's
/// `X-Request-ID` header. Outermost, so that the access log line carries it as well.
struct RequestIdentityMiddleware<Context: AccountRequestContext>: RouterMiddleware {
    let trustedProxies: [AddressBlock]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = RequestIdentity.id(for: request, peer: context.peer, trustedProxies: trustedProxies)
        var context = context
        context.logger[metadataKey: RequestIdentity.metadataKey] = .string(id)
        var response: Response
        do {
            response = try await RequestIdentity.$current.withValue(id) { try await next(request, context) }
        } catch let error as any HTTPResponseError {
            response = try RequestIdentity.$current.withValue(id) { try error.response(from: request, context: context) }
        }
        response.headers[RequestIdentity.header] = id
        return response
    }
}
