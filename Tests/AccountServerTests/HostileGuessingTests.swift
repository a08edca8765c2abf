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

/// Password guessing against a live server with real Argon2id: guesses released together, locks
/// that must not keep the owner out, hashing that must stay bounded.
@Suite("the server under password guessing", .timeLimit(.minutes(3)))
struct HostileGuessingTests {
    static let owner = "owner@example.org"
    static let password = "correct horse battery"

    @Test("200 step-up guesses released together (the right one at #40): at most 5 are checked and the password stays", .integration)
    func parallelStepUp() async throws {
        var configuration = AccountServerConfiguration()
        // Only the store's count stands between the guesses and the hash here.
        configuration.rateLimits.stepUpsPerAccount = RateLimit(burst: 1_000, perMinute: 1_000)
        try await LiveServer.with(configuration: configuration) { server in
            let (token, _) = try await server.signup(Self.owner)
            let requests = (0..<200).map { index in
                let guess = index == 40 ? Self.password : "guess number \(index)"
                return RawHTTP.request(
                    "PATCH", "/v1/account", json: #"{"set":{"password":"taken over 12345"},"currentPassword":"\#(guess)"}"#,
                    headers: ["Authorization": "Bearer \(token)"])
            }
            let answers = try await RawHTTP.together(port: server.port, source: "127.0.0.2", requests)
            let checked = answers.filter { $0.status == 401 || $0.status == 200 }.count
            let refused = answers.filter { $0.status == 429 && $0.problemType == "urn:spezi-account-store:problem:locked-out" }.count
            print("parallel step-up: \(checked) of 200 guesses checked, \(refused) refused before hashing")
            #expect(checked <= 5)
            #expect(checked + refused == 200)
            if answers[40].status != 200 {
                // The password was not changed: the old one still opens a session (from elsewhere).
                #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.3").status == 201)
            }
        }
    }

    @Test("10 wrong logins released together from one address: at most 5 checked; the owner elsewhere signs in", .integration)
    func parallelLogins() async throws {
        try await LiveServer.with { server in
            _ = try await server.signup(Self.owner)
            let requests = (0..<10).map { index in
                RawHTTP.request("POST", "/v1/sessions", json: #"{"userId":"\#(Self.owner)","password":"wrong \#(index)"}"#)
            }
            let answers = try await RawHTTP.together(port: server.port, source: "127.0.0.2", requests)
            #expect(answers.filter { $0.status == 401 }.count <= 5)
            #expect(answers.filter { $0.status == 429 }.count >= 5)
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.3").status == 201)
        }
    }

    @Test("the owner keeps access: a lock is per address and expires with its count; 10 addresses do not use up the owner's logins")
    func ownerKeepsAccess() async throws {
        var configuration = AccountServerConfiguration()
        // The request limits run on the real clock, the lock on the store's: only the lock here.
        configuration.rateLimits.loginsPerAccount = RateLimit(burst: 1_000, perMinute: 1_000)
        try await LiveServer.with(configuration: configuration) { server in
            _ = try await server.signup(Self.owner)
            for _ in 0..<5 { #expect(try await server.login(Self.owner, "wrong", source: "127.0.0.2").status == 401) }
            let locked = try await server.login(Self.owner, Self.password, source: "127.0.0.2")
            #expect(locked.status == 429)
            #expect(locked.problemType == "urn:spezi-account-store:problem:locked-out")
            // The owner, elsewhere.
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.3").status == 201)
            // Ten attackers, one wrong guess each: the owner still signs in.
            for index in 10..<20 { #expect(try await server.login(Self.owner, "wrong", source: "127.0.0.\(index)").status == 401) }
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.4").status == 201)
            // One wrong login every five minutes: the lock and its count expire, nothing piles up.
            server.fixture.advance(seconds: 301)
            for _ in 0..<4 {
                #expect(try await server.login(Self.owner, "wrong", source: "127.0.0.2").status == 401)
                server.fixture.advance(seconds: 300)
            }
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.2").status == 201)
        }
    }

    @Test("a completed password reset lifts the owner's own lock")
    func resetUnlocks() async throws {
        try await LiveServer.with { server in
            _ = try await server.signup(Self.owner)
            for _ in 0..<5 { #expect(try await server.login(Self.owner, "forgotten", source: "127.0.0.5").status == 401) }
            #expect(try await server.login(Self.owner, Self.password, source: "127.0.0.5").status == 429)
            #expect(
                try await RawHTTP.send(port: server.port, source: "127.0.0.5", "POST", "/v1/password-resets", json: #"{"userId":"\#(Self.owner)"}"#)
                    .status == 202)
            await server.store.settleBackgroundWrites()
            let link = try #require(server.fixture.resets.withLock { $0.last })
            let completion = #"{"userId":"\#(Self.owner)","token":"\#(link.token)","newPassword":"a brand new secret"}"#
            #expect(
                try await RawHTTP.send(port: server.port, source: "127.0.0.5", "POST", "/v1/password-resets/complete", json: completion).status == 204
            )
            #expect(try await server.login(Self.owner, "a brand new secret", source: "127.0.0.5").status == 201)
        }
    }

    @Test("upgrade to a taken user id: 409 before any hash, then 429 past the client's signup limit")
    func upgradeFlood() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.signupsPerClient = RateLimit(burst: 6, perMinute: 1)
        try await LiveServer.with(configuration: configuration) { server in
            _ = try await server.signup(Self.owner, source: "127.0.0.9")
            let anonymous = try await RawHTTP.send(port: server.port, source: "127.0.0.6", "POST", "/v1/accounts/anonymous")
            let token = try #require(anonymous.json["token"] as? String)
            var statuses: [Int] = []
            for _ in 0..<8 {
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.6", "POST", "/v1/account/upgrade",
                    json: #"{"userId":"\#(Self.owner)","password":"another password 1","name":{"givenName":"Eve"}}"#,
                    headers: ["Authorization": "Bearer \(token)"])
                statuses.append(answer.status)
            }
            #expect(statuses == [409, 409, 409, 409, 409, 429, 429, 429])
        }
    }

    @Test("the hashing queue is bounded: signups past it are answered 503 with Retry-After, the rest succeed", .integration)
    func boundedHashing() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.signupsPerClient = RateLimit(burst: 1_000, perMinute: 1_000)
        configuration.rateLimits.recordsPerClient = RateLimit(burst: 1_000, perMinute: 1_000)
        try await LiveServer.with(configuration: configuration, tweaks: StoreTweaks(maxQueuedPasswordChecks: 2)) { server in
            let requests = (0..<24).map { index in
                RawHTTP.request(
                    "POST", "/v1/accounts",
                    json: #"{"userId":"flood\#(index)@example.org","password":"correct horse battery","name":{"givenName":"F"}}"#)
            }
            let answers = try await RawHTTP.together(port: server.port, source: "127.0.0.7", requests)
            let overloaded = answers.filter { $0.status == 503 && $0.problemType == "urn:spezi-account-store:problem:overloaded" }
            print("bounded hashing: \(answers.filter { $0.status == 201 }.count) of 24 signups created, \(overloaded.count) answered 503")
            #expect(!overloaded.isEmpty)
            #expect(overloaded.allSatisfy { $0.headers["retry-after"] == "1" })
            #expect(answers.filter { $0.status == 201 }.count + overloaded.count == 24)
            // After the flood: the log verifies, and every acknowledged signup is there.
            #expect(try await server.store.log.verify(batchSize: 256, progress: nil).problem == nil)
            for (index, answer) in answers.enumerated() where answer.status == 201 {
                #expect(try await server.store.accounts.accountId(forUserId: "flood\(index)@example.org") != nil)
            }
        }
    }

    @Test("logins racing a password change: no session opened with the old password outlives the change")
    func loginRacingPasswordChange() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.signupsPerClient = RateLimit(burst: 1_000, perMinute: 1_000)
        configuration.rateLimits.recordsPerClient = RateLimit(burst: 1_000, perMinute: 1_000)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            var survivors = 0
            for round in 0..<30 {
                let userId = "race\(round)@example.org"
                let (token, _) = try await server.signup(userId)
                async let login = server.login(userId, Self.password, source: "127.0.0.8")
                async let change = RawHTTP.send(
                    port: server.port, "PATCH", "/v1/account",
                    json: #"{"set":{"password":"new password \#(round)"},"currentPassword":"\#(Self.password)"}"#,
                    headers: ["Authorization": "Bearer \(token)"])
                let (opened, changed) = try await (login, change)
                #expect(changed.status == 200)
                if let session = opened.json["token"] as? String {
                    let check = try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: ["Authorization": "Bearer \(session)"])
                    if check.status == 200 { survivors += 1 }
                }
            }
            #expect(survivors == 0)
        }
    }
}
