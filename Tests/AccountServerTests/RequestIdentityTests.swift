//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccountStore
import Testing

@testable import AccountServer

/// Each request's id: in the answer's header, in its problem document, in every line logged for it
/// and in the events it appends; taken from `traceparent` only when a trusted proxy sent it.
@Suite("request ids", .timeLimit(.minutes(3)))
struct RequestIdentityTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let traceparent = "00-\(traceID)-00f067aa0ba902b7-01"

    static func isID(_ text: String?) -> Bool {
        guard let text else { return false }
        return text.utf8.count == 32 && text.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    @Test("a failing request's id is in its header, its problem document and each line logged for it")
    func failingRequest() async throws {
        let log = CapturedLog()
        try await LiveServer.with(realHashing: false, logger: log.logger()) { server in
            let answer = try await server.login("nobody@example.org", "wrong password")
            #expect(answer.status == 401)
            let id = try #require(answer.headers["x-request-id"])
            #expect(Self.isID(id), "\(id)")
            #expect(answer.json["requestId"] as? String == id, "\(answer.body)")
            #expect(answer.json["instance"] as? String == "urn:spezi-account-store:request:\(id)")

            // A request refused by a middleware (no JSON body) carries its own id too.
            let refused = try await RawHTTP.send(port: server.port, "POST", "/v1/sessions", headers: ["Content-Type": "text/plain"])
            #expect(refused.status == 415)
            let refusedID = try #require(refused.headers["x-request-id"])
            #expect(refusedID != id)
            #expect(refused.json["requestId"] as? String == refusedID, "\(refused.body)")

            let lines = log.lines.filter { $0.metadata[RequestIdentity.metadataKey] == id }
            #expect(lines.contains { $0.message == "request" && $0.metadata["status"] == "401" }, "\(log.lines)")
            #expect(log.lines.contains { $0.message == "request" && $0.metadata[RequestIdentity.metadataKey] == refusedID })
            // Every line of the API's requests names its request (Hummingbird's own line at start
            // belongs to no request).
            let requestLines = log.lines.filter { !$0.message.hasPrefix("Server started") }
            #expect(requestLines.count >= 2)
            #expect(requestLines.allSatisfy { $0.metadata[RequestIdentity.metadataKey] != nil }, "\(log.lines)")
        }
    }

    @Test("a rate-limited request's log line and problem document share its id")
    func limitedRequest() async throws {
        let log = CapturedLog()
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.loginsPerClient = RateLimit(burst: 1, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false, logger: log.logger()) { server in
            _ = try await server.login("nobody@example.org", "wrong password")
            let answer = try await server.login("nobody@example.org", "wrong password")
            #expect(answer.status == 429)
            let id = try #require(answer.json["requestId"] as? String)
            #expect(answer.headers["x-request-id"] == id)
            #expect(log.lines.contains { $0.message == "rate limited" && $0.metadata[RequestIdentity.metadataKey] == id }, "\(log.lines)")
        }
    }

    @Test("traceparent names the request only when a trusted proxy sent it")
    func traceparentFromTrustedProxy() async throws {
        var configuration = AccountServerConfiguration()
        configuration.trustedProxies = [try #require(AddressBlock("127.0.0.1/32"))]
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            let proxied = try await RawHTTP.send(port: server.port, source: "127.0.0.1", "GET", "/health", headers: ["traceparent": Self.traceparent])
            #expect(proxied.headers["x-request-id"] == Self.traceID)
            let direct = try await RawHTTP.send(port: server.port, source: "127.0.0.2", "GET", "/health", headers: ["traceparent": Self.traceparent])
            #expect(Self.isID(direct.headers["x-request-id"]))
            #expect(direct.headers["x-request-id"] != Self.traceID)
            // A malformed traceparent from the proxy is ignored, not echoed.
            let malformed = try await RawHTTP.send(
                port: server.port, source: "127.0.0.1", "GET", "/health",
                headers: ["traceparent": "00-\(Self.traceID.uppercased())-00f067aa0ba902b7-01"])
            #expect(Self.isID(malformed.headers["x-request-id"]))
            #expect(malformed.headers["x-request-id"] != Self.traceID)
        }
    }

    @Test("the events a request appends carry its id, unless the client sent an X-Request-ID of its own")
    func correlation() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let first = try await RawHTTP.send(
                port: server.port, "POST", "/v1/accounts",
                json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
            #expect(first.status == 201)
            let id = try #require(first.headers["x-request-id"])
            let accountId = try #require((first.json["account"] as? [String: Any])?["accountId"] as? String)
            let records = try await server.store.log.readStream(accountId, from: 1, limit: 100)
            #expect(!records.isEmpty)
            #expect(records.allSatisfy { $0.metadata.correlationID == id }, "\(records.map(\.metadata.correlationID))")

            let second = try await RawHTTP.send(
                port: server.port, "POST", "/v1/accounts",
                json: #"{"userId":"grace@example.org","password":"correct horse battery","name":{"givenName":"Grace"}}"#,
                headers: ["X-Request-ID": "client-chosen-7"])
            let other = try #require((second.json["account"] as? [String: Any])?["accountId"] as? String)
            let kept = try await server.store.log.readStream(other, from: 1, limit: 100)
            #expect(kept.allSatisfy { $0.metadata.correlationID == "client-chosen-7" })
            #expect(second.headers["x-request-id"] != "client-chosen-7")
        }
    }

    @Test("traceparent parsing follows W3C trace context")
    func parsing() {
        #expect(RequestIdentity.traceID(fromTraceparent: Self.traceparent) == Self.traceID)
        #expect(RequestIdentity.traceID(fromTraceparent: "01-\(Self.traceID)-00f067aa0ba902b7-01-later") == Self.traceID)
        for bad in [
            "", "00-\(Self.traceID)-00f067aa0ba902b7", "ff-\(Self.traceID)-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-\(Self.traceID)-0000000000000000-01",
            "00-\(Self.traceID)-00f067aa0ba902b7-01-extra", "00-\(Self.traceID.dropLast())-00f067aa0ba902b7-01",
            "00-\(Self.traceID)-00F067AA0BA902B7-01"
        ] {
            #expect(RequestIdentity.traceID(fromTraceparent: bad) == nil, "\(bad)")
        }
        #expect(Self.isID(RequestIdentity.make()))
        #expect(RequestIdentity.make() != RequestIdentity.make())
    }
}
