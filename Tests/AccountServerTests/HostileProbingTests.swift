//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import SpeziAccountStore
import TestSupport
import TestTiers
import Testing

/// Probing for accounts, hiding behind proxies, growing the log: what an attacker learns and what
/// one address can cost. Real sockets; timings are printed as measured comparisons, never asserted.
@Suite("the server under probing", .timeLimit(.minutes(3)))
struct HostileProbingTests {
    static let owner = "owner@example.org"

    /// The median milliseconds of `body` over `count` runs, `spacing` apart.
    static func median(_ count: Int, spacing: Duration = .zero, _ body: () async throws -> Void) async throws -> Double {
        var times: [Double] = []
        for _ in 0..<count {
            try await Task.sleep(for: spacing)
            let start = ContinuousClock.now
            try await body()
            let elapsed = ContinuousClock.now - start
            times.append(Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15)
        }
        return times.sorted()[count / 2]
    }

    @Test("existing and unknown user ids: the same answers on reset, reset completion and login, and the same lock", .integration)
    func noOracle() async throws {
        var configuration = AccountServerConfiguration()
        let generous = RateLimit(burst: 10_000, perMinute: 10_000)
        configuration.rateLimits = RateLimits()
        configuration.rateLimits.resetsPerClient = generous
        configuration.rateLimits.resetsPerAccount = generous
        configuration.rateLimits.resetCompletionsPerAccount = generous
        configuration.rateLimits.recordsPerClient = generous
        configuration.rateLimits.loginsPerClient = generous
        try await LiveServer.with(configuration: configuration) { server in
            _ = try await server.signup(Self.owner)
            var report: [String] = []
            for (route, json) in [
                ("/v1/password-resets", #"{"userId":"%@"}"#),
                (
                    "/v1/password-resets/complete",
                    #"{"userId":"%@","token":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","newPassword":"a new secret 123"}"#
                )
            ] {
                var answers: [String: Set<String>] = [:]
                var medians: [String: Double] = [:]
                for userId in [Self.owner, "nobody@example.org"] {
                    // Spaced out, so that one request's timing is measured, not the load the
                    // previous one left behind (a reset request writes after its answer).
                    medians[userId] = try await Self.median(30, spacing: .milliseconds(30)) {
                        let answer = try await RawHTTP.send(
                            port: server.port, "POST", route, json: json.replacingOccurrences(of: "%@", with: userId))
                        answers[userId, default: []].insert("\(answer.status) \(answer.comparableBody)")
                    }
                }
                #expect(answers[Self.owner] == answers["nobody@example.org"])
                #expect(answers[Self.owner]?.count == 1)
                report.append(
                    "\(route): existing \(String(format: "%.2f", medians[Self.owner] ?? 0)) ms, "
                        + "unknown \(String(format: "%.2f", medians["nobody@example.org"] ?? 0)) ms (median of 30)")
            }
            await server.store.settleBackgroundWrites()
            // Logins: five wrong ones each, then the same lock answer for both.
            var lockAnswers: [String] = []
            for (index, userId) in [Self.owner, "nobody@example.org"].enumerated() {
                let source = "127.0.1.\(index + 1)"
                let wrong = try await Self.median(5) {
                    let status = try await server.login(userId, "wrong password", source: source).status
                    #expect(status == 401)
                }
                let sixth = try await server.login(userId, "wrong password", source: source)
                lockAnswers.append("\(sixth.status) \(sixth.problemType ?? "") \(sixth.headers["retry-after"] ?? "")")
                report.append("login, \(index == 0 ? "existing" : "unknown"): wrong password \(String(format: "%.2f", wrong)) ms (median of 5)")
            }
            #expect(lockAnswers[0] == lockAnswers[1])
            #expect(lockAnswers[0] == "429 urn:spezi-account-store:problem:locked-out 300")
            print("timing of existing vs unknown user ids:\n  " + report.joined(separator: "\n  "))
        }
    }

    @Test("behind a trusted proxy each forwarded client has its own limits; untrusted peers cannot spoof X-Forwarded-For")
    func trustedProxy() async throws {
        var configuration = AccountServerConfiguration()
        configuration.trustedProxies = [try #require(AddressBlock("127.0.0.1/32"))]
        configuration.rateLimits.loginsPerClient = RateLimit(burst: 3, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            let attempt = { @Sendable (source: String, forwardedFor: String?) async throws -> Int in
                try await RawHTTP.send(
                    port: server.port, source: source, "POST", "/v1/sessions", json: #"{"userId":"x@example.org","password":"wrong"}"#,
                    headers: forwardedFor.map { ["X-Forwarded-For": $0] } ?? [:]
                ).status
            }
            // The proxy forwards for an attacker: 3 logins, then 429 for that client only.
            for _ in 0..<3 { #expect(await Self.status(attempt, "127.0.0.1", "198.51.100.1") == 401) }
            #expect(await Self.status(attempt, "127.0.0.1", "198.51.100.1") == 429)
            #expect(await Self.status(attempt, "127.0.0.1", "198.51.100.2") == 401)
            // A chain: the client is the right-most address that is not a trusted proxy.
            #expect(await Self.status(attempt, "127.0.0.1", "203.0.113.5, 198.51.100.1, 127.0.0.1") == 429)
            // IPv6 clients share their /64.
            for _ in 0..<3 { #expect(await Self.status(attempt, "127.0.0.1", "2001:db8:1:2::1") == 401) }
            #expect(await Self.status(attempt, "127.0.0.1", "2001:db8:1:2:ffff::9") == 429)
            #expect(await Self.status(attempt, "127.0.0.1", "2001:db8:1:3::1") == 401)
            // An untrusted peer's header is ignored: it is limited as itself.
            for index in 0..<3 { #expect(await Self.status(attempt, "127.0.0.2", "192.0.2.\(index)") == 401) }
            #expect(await Self.status(attempt, "127.0.0.2", "192.0.2.200") == 429)
        }
    }

    /// The status of `attempt`, or 0 when it threw (the test then fails on the status).
    static func status(_ attempt: @Sendable (String, String?) async throws -> Int, _ source: String, _ forwardedFor: String?) async -> Int {
        do {
            return try await attempt(source, forwardedFor)
        } catch {
            Issue.record(error)
            return 0
        }
    }

    @Test("client addresses: CIDR blocks, IPv6 grouped by /64, Forwarded before X-Forwarded-For")
    func addressParsing() throws {
        let block = try #require(AddressBlock("10.1.0.0/16"))
        #expect(block.contains("10.1.200.3") && !block.contains("10.2.0.1"))
        #expect(try #require(AddressBlock("2001:db8::/32")).contains("2001:db8:ffff::1"))
        #expect(AddressBlock("10.0.0.0/33") == nil && AddressBlock("example.org") == nil)
        #expect(try #require(AddressBlock("::ffff:192.0.2.1")).contains("192.0.2.1"))
    }

    @Test("what one address can append is bounded: anonymous sign-ins and failed logins share one records limit")
    func boundedGrowth() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.recordsPerClient = RateLimit(burst: 4, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            _ = try await server.signup(Self.owner, source: "127.0.0.3")
            let before = try await server.store.log.lastPosition()
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(try await RawHTTP.send(port: server.port, source: "127.0.0.2", "POST", "/v1/accounts/anonymous").status)
            }
            for _ in 0..<3 { statuses.append(try await server.login(Self.owner, "wrong", source: "127.0.0.2").status) }
            #expect(statuses == [201, 201, 201, 401, 429, 429])
            await server.store.settleBackgroundWrites()
            // Three anonymous accounts (a record each, and a session each) and one failed login.
            #expect(try await server.store.log.lastPosition() - before == 3 * 2 + 1)
        }
    }

    @Test("reset links: a stranger's requests neither void the owner's link nor get a 429 for the owner's user id")
    func resetLinksStay() async throws {
        try await LiveServer.with(realHashing: false) { server in
            _ = try await server.signup(Self.owner)
            #expect(
                try await RawHTTP.send(port: server.port, source: "127.0.0.4", "POST", "/v1/password-resets", json: #"{"userId":"\#(Self.owner)"}"#)
                    .status == 202)
            await server.store.settleBackgroundWrites()
            let first = try #require(server.fixture.resets.withLock { $0.first })
            for index in 0..<6 {
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.\(20 + index)", "POST", "/v1/password-resets", json: #"{"userId":"\#(Self.owner)"}"#)
                #expect(answer.status == 202)
            }
            await server.store.settleBackgroundWrites()
            // Three a minute per user id: the requests past it sent nothing.
            #expect(server.fixture.resets.withLock { $0.count } == 3)
            let completion = #"{"userId":"\#(Self.owner)","token":"\#(first.token)","newPassword":"the first link works"}"#
            #expect(try await RawHTTP.send(port: server.port, "POST", "/v1/password-resets/complete", json: completion).status == 204)
        }
    }
}
