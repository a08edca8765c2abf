//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import SpeziAccountStore
import Testing

/// The owner always gets in: attacks that spend a user id's shared allowances (the account-wide
/// spacing of password checks, the reset completions, the admin credential's checks) run against a
/// live server while the owner signs in from a client that signed in before.
@Suite("the owner gets in while others spend the allowances", .timeLimit(.minutes(3)))
struct OwnerAccessTests {
    static let owner = "owner@example.org"
    static let password = "correct horse battery"

    @Test("guesses from 30 addresses keep the account-wide queue full: a stranger is refused, the owner's known device signs in at once")
    func knownDeviceSkipsTheQueue() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.loginsPerAccount = RateLimit(burst: 1_000, perMinute: 1_000)
        var tweaks = StoreTweaks()
        // Past 3 failures of the user id, one check every 2 s, waiting at most 1 s: the queue is full.
        tweaks.loginThrottling = LoginThrottling(
            attemptsPerClient: 5, lockDuration: .seconds(300), accountWideAttempts: 3, slowdownInterval: .seconds(2), maximumWait: .seconds(1))
        try await LiveServer.with(configuration: configuration, realHashing: false, tweaks: tweaks) { server in
            // The owner signed up (and so signed in) from this client: it keeps the device cookie.
            let signup = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "POST", "/v1/accounts",
                json: #"{"userId":"\#(Self.owner)","password":"\#(Self.password)","name":{"givenName":"Ada"}}"#)
            #expect(signup.status == 201)
            let cookies = signup.cookiePairs.filter { $0.hasPrefix("spezi_device_") }
            #expect(cookies.count == 1, "\(signup.setCookies)")
            // Thirty addresses guess, two rounds each.
            for round in 0..<2 {
                for index in 0..<30 {
                    _ = try await server.login(Self.owner, "guess \(round) \(index)", source: "127.0.1.\(index + 1)")
                }
            }
            // A client without the cookie, with the right password, waits in the crowd's queue: refused.
            let stranger = try await server.login(Self.owner, Self.password, source: "127.0.0.3")
            #expect(stranger.status == 429, "\(stranger.status) \(stranger.body)")
            #expect(stranger.problemType == "urn:spezi-account-store:problem:locked-out")
            // The owner's client, ten times: never refused.
            for _ in 0..<10 {
                let owner = try await server.login(Self.owner, Self.password, source: "127.0.0.2", cookies: cookies)
                #expect(owner.status == 201, "\(owner.status) \(owner.body)")
                // The crowd keeps guessing between the owner's sign-ins.
                for index in 0..<5 { _ = try await server.login(Self.owner, "more \(index)", source: "127.0.2.\(index + 1)") }
            }
            // A cookie for another user id, or an altered one, makes no known device: once the crowd
            // has filled the queue again, its holder is refused with the strangers.
            for index in 0..<5 { _ = try await server.login(Self.owner, "again \(index)", source: "127.0.3.\(index + 1)") }
            let forged = cookies.map { $0.dropLast(2) + "AA" }.map(String.init)
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.3", cookies: forged).status == 429)
        }
    }

    @Test("a known device that guesses wrong five times is locked like any client, and is then a stranger again")
    func knownDeviceCanBeLocked() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.loginsPerAccount = RateLimit(burst: 1_000, perMinute: 1_000)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            _ = try await server.signup(Self.owner, source: "127.0.0.9")
            let login = try await server.login(Self.owner, Self.password, source: "127.0.0.2")
            let cookies = login.cookiePairs.filter { $0.hasPrefix("spezi_device_") }
            #expect(cookies.count == 1)
            for _ in 0..<5 { #expect(try await server.login(Self.owner, "wrong", source: "127.0.0.2", cookies: cookies).status == 401) }
            // The device is locked; the address it uses has no failures of its own yet.
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.2", cookies: cookies).status == 201)
        }
    }

    @Test("bogus reset completions from 10 addresses use up the user id's allowance for wrong tokens; the owner's link still works")
    func ownerResetLinkWorks() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.resetCompletionsPerAccount = RateLimit(burst: 5, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            _ = try await server.signup(Self.owner, source: "127.0.0.2")
            #expect(
                try await RawHTTP.send(port: server.port, source: "127.0.0.2", "POST", "/v1/password-resets", json: #"{"userId":"\#(Self.owner)"}"#)
                    .status == 202)
            await server.store.settleBackgroundWrites()
            let token = try #require(server.fixture.resets.withLock { $0.last?.token })
            var refused = 0
            for index in 0..<20 {
                let bogus = String(repeating: "A", count: 42) + String(index % 10)
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.1.\(index % 10 + 1)", "POST", "/v1/password-resets/complete",
                    json: #"{"userId":"\#(Self.owner)","token":"\#(bogus)","newPassword":"taken over 12345"}"#)
                if answer.status == 429 { refused += 1 } else { #expect(answer.status == 400) }
            }
            #expect(refused >= 10, "the wrong tokens used the allowance up")
            let owner = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "POST", "/v1/password-resets/complete",
                json: #"{"userId":"\#(Self.owner)","token":"\#(token)","newPassword":"my new password 123"}"#)
            #expect(owner.status == 204, "\(owner.status) \(owner.body)")
            #expect(try await server.login(Self.owner, "my new password 123", source: "127.0.0.2").status == 201)
        }
    }

    @Test("admin guesses from 10 addresses: at most the server-wide allowance is checked; the admin's browser still signs in")
    func adminGuessesBounded() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "root", password: "admin password 123")
        configuration.rateLimits.adminAttemptsOverall = RateLimit(burst: 30, perMinute: 1)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            func signIn(_ password: String, source: String, cookies: [String] = []) async throws -> RawHTTP.Answer {
                var headers = ["Sec-Fetch-Site": "same-origin"]
                if !cookies.isEmpty { headers["Cookie"] = cookies.joined(separator: "; ") }
                return try await RawHTTP.send(
                    port: server.port, source: source, "POST", "/admin/api/session", json: #"{"name":"root","password":"\#(password)"}"#,
                    headers: headers)
            }
            // The admin signed in before from this browser.
            let first = try await signIn("admin password 123", source: "127.0.0.2")
            #expect(first.status == 200)
            let device = first.cookiePairs.filter { $0.hasPrefix("spezi_admin_device=") }
            #expect(device.count == 1, "\(first.setCookies)")
            var checked = 0
            for index in 0..<220 {
                let answer = try await signIn("guess \(index)", source: "127.0.1.\(index % 10 + 1)")
                if answer.status == 401 { checked += 1 } else { #expect(answer.status == 429) }
            }
            #expect(checked <= 30, "\(checked) of 220 guesses were checked")
            // A stranger with the right password is refused with the crowd; the admin's browser is not.
            #expect(try await signIn("admin password 123", source: "127.0.0.3").status == 429)
            #expect(try await signIn("admin password 123", source: "127.0.0.2", cookies: device).status == 200)
        }
    }
}

/// An open admin tail after its session is signed out.
@Suite("the admin tail and sign-out", .timeLimit(.minutes(2)))
struct AdminTailSignOutTests {
    @Test("an admin tail opened with a session ends once that session is signed out")
    func tailEndsAtSignOut() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "root", password: "admin password 123")
        configuration.heartbeat = .milliseconds(200)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            let signIn = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "POST", "/admin/api/session", json: #"{"name":"root","password":"admin password 123"}"#,
                headers: ["Sec-Fetch-Site": "same-origin"])
            #expect(signIn.status == 200)
            let session = try #require(signIn.cookiePairs.first { $0.hasPrefix("spezi_admin=") })
            let (descriptor, head) = try await RawHTTP.openStream(
                port: server.port, source: "127.0.0.2",
                RawHTTP.request("GET", "/admin/api/tail", headers: ["Cookie": session, "Sec-Fetch-Site": "same-origin"]))
            defer { close(descriptor) }
            #expect(head.status == 200)
            // Open while the session is: a second of heartbeats does not end it.
            #expect(try await !RawHTTP.ends(descriptor, within: 1))
            let signOut = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "DELETE", "/admin/api/session",
                headers: ["Cookie": session, "Sec-Fetch-Site": "same-origin"])
            #expect(signOut.status == 204)
            _ = try await server.signup("someone@example.org", source: "127.0.0.3")
            #expect(try await RawHTTP.ends(descriptor, within: 5), "the tail went on after sign-out")
        }
    }
}
