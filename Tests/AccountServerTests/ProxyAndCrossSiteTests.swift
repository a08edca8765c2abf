//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import HTTPTypes
import Testing

@testable import AccountServer

/// Who the client is behind a proxy, and what a page on another site can make its visitors send:
/// attacks run against a live server over real sockets.
@Suite("the client's address and cross-site requests", .timeLimit(.minutes(3)))
struct ProxyAndCrossSiteTests {
    static func wrongLogin(_ userId: String) -> String {
        #"{"userId":"\#(userId)","password":"wrong password"}"#
    }

    @Test("behind a proxy that appends to X-Forwarded-For, the client's own Forwarded header changes nothing: 429 after 30 logins")
    func clientPicksNoAddress() async throws {
        var configuration = AccountServerConfiguration()
        configuration.trustedProxies = [try #require(AddressBlock("127.0.0.1/32"))]
        configuration.rateLimits.loginsPerClient = RateLimit(burst: 30, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            var statuses: [Int] = []
            for index in 0..<40 {
                // The client names a new address each time; the proxy appends the one it saw.
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.1", "POST", "/v1/sessions", json: Self.wrongLogin("nobody\(index)@example.org"),
                    headers: ["Forwarded": "for=198.51.100.\(index)", "X-Forwarded-For": "198.51.100.\(index), 203.0.113.9"])
                statuses.append(answer.status)
            }
            #expect(statuses.prefix(30).allSatisfy { $0 == 401 }, "\(statuses)")
            #expect(statuses.dropFirst(30).allSatisfy { $0 == 429 }, "\(statuses)")
        }
    }

    @Test("30 guesses at one account behind the proxy, each with a new Forwarded: locked out after 5")
    func lockoutHoldsBehindProxy() async throws {
        var configuration = AccountServerConfiguration()
        configuration.trustedProxies = [try #require(AddressBlock("127.0.0.1/32"))]
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            _ = try await server.signup("owner@example.org", source: "127.0.0.5")
            var statuses: [Int] = []
            for index in 0..<30 {
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.1", "POST", "/v1/sessions", json: Self.wrongLogin("owner@example.org"),
                    headers: ["Forwarded": "for=192.0.2.\(index)", "X-Forwarded-For": "203.0.113.9"])
                statuses.append(answer.status)
                if index == 5 { #expect(answer.problemType == "urn:spezi-account-store:problem:locked-out") }
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == 401 }, "\(statuses)")
            #expect(statuses.dropFirst(5).allSatisfy { $0 == 429 }, "\(statuses)")
        }
    }

    @Test("hops that are not addresses count against the proxy that wrote them, never against a bucket strangers share")
    func obfuscatedHops() async throws {
        var configuration = AccountServerConfiguration()
        configuration.trustedProxies = [try #require(AddressBlock("127.0.0.1/32")), try #require(AddressBlock("127.0.0.2/32"))]
        configuration.forwardedHeader = .forwarded
        configuration.rateLimits.loginsPerClient = RateLimit(burst: 3, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            let attempts = [
                ("127.0.0.1", "for=_hidden"), ("127.0.0.1", "for=unknown"), ("127.0.0.1", "by=_proxy"), ("127.0.0.1", "for=_other"),
                ("127.0.0.2", "for=unknown"), ("127.0.0.1", "for=198.51.100.7")
            ]
            var statuses: [Int] = []
            for (index, (source, forwarded)) in attempts.enumerated() {
                let answer = try await RawHTTP.send(
                    port: server.port, source: source, "POST", "/v1/sessions", json: Self.wrongLogin("x\(index)@example.org"),
                    headers: ["Forwarded": forwarded])
                statuses.append(answer.status)
            }
            // Proxy 1 forwards `_hidden`, `unknown` and an element without `for=`: all count as its
            // own (the fourth is over its limit); proxy 2's `unknown` has its own bucket; a real
            // client behind proxy 1 is still itself.
            #expect(statuses == [401, 401, 401, 429, 401, 401])
        }
    }

    @Test("the configured header alone is read, right to left, skipping trusted proxies")
    func resolverReadsOneHeader() throws {
        let proxies = [try #require(AddressBlock("10.0.0.0/8"))]
        let xff = ClientAddressResolver(trustedProxies: proxies, header: .xForwardedFor)
        let forwarded = ClientAddressResolver(trustedProxies: proxies, header: .forwarded)
        var headers = HTTPFields()
        headers[HTTPField.Name("Forwarded")!] = "for=192.0.2.66"
        headers[HTTPField.Name("X-Forwarded-For")!] = "192.0.2.66, 198.51.100.1, 10.0.0.2"
        #expect(xff.client(peer: "10.0.0.1", headers: headers) == "198.51.100.1")
        #expect(forwarded.client(peer: "10.0.0.1", headers: headers) == "192.0.2.66")
        // Not from a trusted proxy: the peer, whatever the headers say.
        #expect(xff.client(peer: "203.0.113.3", headers: headers) == "203.0.113.3")
        // A hop that is not an address stops the walk at the proxy that wrote it.
        headers[HTTPField.Name("X-Forwarded-For")!] = "198.51.100.1, garbage, 10.0.0.2"
        #expect(xff.client(peer: "10.0.0.1", headers: headers) == "10.0.0.2")
        headers[HTTPField.Name("X-Forwarded-For")!] = "unknown"
        #expect(xff.client(peer: "10.0.0.1", headers: headers) == "10.0.0.1")
        // Quoted IPv6 with a port, grouped by /64.
        headers[HTTPField.Name("Forwarded")!] = #"for="[2001:db8:1:2::9]:4711";proto=https"#
        #expect(forwarded.client(peer: "10.0.0.1", headers: headers) == "2001:db8:1:2:0:0:0:0/64")
        #expect(ForwardedHeader("X-Real-IP") != nil && ForwardedHeader("bad header") == nil)
    }

    @Test("a page elsewhere sends text/plain logins (no-cors): 415, nothing is counted, the visitor's own login works")
    func simpleCrossSiteRequestsRefused() async throws {
        try await LiveServer.with(realHashing: false) { server in
            _ = try await server.signup("victim@example.org", source: "127.0.0.4")
            for _ in 0..<12 {
                // What `fetch(url, {mode: "no-cors", method: "POST", body: JSON.stringify(...)})` sends.
                let request = Array(
                    ("POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nOrigin: https://evil.example\r\n"
                        + "Content-Type: text/plain;charset=UTF-8\r\nContent-Length: \(Self.wrongLogin("victim@example.org").utf8.count)\r\n\r\n"
                        + Self.wrongLogin("victim@example.org")).utf8)
                let answer = try await RawHTTP.exchange(port: server.port, source: "127.0.0.7", request)
                #expect(answer.status == 415)
                #expect(answer.problemType == "urn:spezi-account-store:problem:unsupported-media-type")
            }
            // No lock, no limit spent: the visitor signs in from the same address.
            #expect(try await server.login("victim@example.org", "correct horse battery", source: "127.0.0.7").status == 201)
            // And the answers grant no cross-origin reads.
            let answer = try await server.login("victim@example.org", "wrong", source: "127.0.0.8")
            #expect(answer.headers["access-control-allow-origin"] == nil)
        }
    }

    @Test("no product name in the Server header")
    func noServerHeader() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let answer = try await RawHTTP.send(port: server.port, "GET", "/health")
            #expect(answer.status == 200)
            #expect(answer.headers["server"] == nil)
        }
    }
}
