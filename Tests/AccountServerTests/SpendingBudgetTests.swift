//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import SpeziAccount
import SpeziAccountStore
import Synchronization
import TestSupport
import Testing

@testable import AccountServer

/// A backend that counts the stream reads the store makes, by stream.
final class CountingLog: ForwardingLog, @unchecked Sendable {
    /// Per stream: each read's first version and how many records it returned.
    let streamReads = Mutex<[String: [(from: UInt64, records: Int)]]>([:])

    override func readStream(_ streamID: String, from version: UInt64, limit: Int) async throws -> [RecordedEvent] {
        let records = try await super.readStream(streamID, from: version, limit: limit)
        streamReads.withLock { $0[streamID, default: []].append((version, records.count)) }
        return records
    }

    func reads(of streamID: String) -> [(from: UInt64, records: Int)] { streamReads.withLock { $0[streamID] ?? [] } }
}

/// What one client, one session or one account can make the server spend: memory for keys, bytes
/// appended, streams read, answers built, secrets handed out. Each attack runs over real sockets.
@Suite("budgets: what a client can spend is bounded", .timeLimit(.minutes(3)))
struct SpendingBudgetTests {
    static let owner = "owner@example.org"
    static let password = "correct horse battery"

    static func rename(_ givenName: String) throws -> AccountModifications {
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: givenName)
        return try AccountModifications(modifiedDetails: change)
    }

    @Test("344 logins and resets whose user ids are 20,000 × U+FDFA (NFKC makes them 18 times longer): no key, no lock, no memory kept")
    func oversizedUserIdsCostNothing() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.loginsPerClient = RateLimit(burst: 10_000, perMinute: 10_000)
        configuration.rateLimits.resetsPerClient = RateLimit(burst: 10_000, perMinute: 10_000)
        configuration.rateLimits.recordsPerClient = RateLimit(burst: 10_000, perMinute: 10_000)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            let before = server.server.limiterUse.keys
            for index in 0..<344 {
                let userId = String(repeating: "\u{FDFA}", count: 20_000) + "\(index)"
                let source = "127.0.3.\(index % 8 + 1)"
                // Few completions: each refused one waits out the 250 ms floor.
                let route = index % 34 == 0 ? 2 : index % 2
                let answer: RawHTTP.Answer
                switch route {
                case 0: answer = try await server.login(userId, "wrong", source: source)
                case 1:
                    answer = try await RawHTTP.send(
                        port: server.port, source: source, "POST", "/v1/password-resets", json: #"{"userId":"\#(userId)"}"#)
                default:
                    answer = try await RawHTTP.send(
                        port: server.port, source: source, "POST", "/v1/password-resets/complete",
                        json: #"{"userId":"\#(userId)","token":"x","newPassword":"new password 1234"}"#)
                }
                #expect([401, 202, 400].contains(answer.status), "\(answer.status)")
            }
            await server.store.settleBackgroundWrites()
            // Only the eight addresses' per-client buckets (three kinds each) are new.
            #expect(server.server.limiterUse.keys - before <= 8 * 4)
            #expect(server.store.throttleEntries == 0)
        }
    }

    @Test("the limiter keeps at most its capacity whatever the keys, oldest out first, and says how many it dropped")
    func limiterMemoryBounded() {
        let limiter = RateLimiter(name: "test", capacity: 1_000)
        let limit = RateLimit(burst: 1, perMinute: 1)
        func key(_ index: Int) -> String { String(repeating: "x", count: index % 300) + "\(index)" }
        for index in 0..<20_000 { _ = limiter.take(key(index), limit: limit) }
        #expect(limiter.count == 1_000)
        // The bytes stay those of 1,000 entries, however long the keys were.
        #expect(limiter.approximateBytes < 1_000 * 200)
        // The newest keys are kept (their buckets are empty), the oldest forgotten (full again).
        #expect(limiter.take(key(19_999), limit: limit) != nil)
        #expect(limiter.take(key(0), limit: limit) == nil)
    }

    @Test("one session sending 60 KB PATCHes: refused past the account's bytes per day; the log grows by that and no more")
    func changeBytesBudget() async throws {
        var tweaks = StoreTweaks()
        var limits = AccountStoreLimits()
        limits.changeBytesPerAccountPerDay = 256 * 1_024
        tweaks.limits = limits
        try await LiveServer.with(realHashing: false, tweaks: tweaks) { server in
            let (token, _) = try await server.signup(Self.owner, source: "127.0.0.2")
            let before = try await server.store.log.statistics()
            var accepted = 0
            var refused: RawHTTP.Answer?
            for index in 0..<40 {
                let biography = String(repeating: "b", count: 60_000 - 100) + "\(index)"
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.2", "PATCH", "/v1/account",
                    json: #"{"set":{"name":{"givenName":"\#(biography)"}}}"#, headers: ["Authorization": "Bearer \(token)"])
                if answer.status == 200 { accepted += 1 } else { refused = answer }
            }
            #expect(accepted == 4, "\(accepted) changes of 60 KB accepted")
            #expect(refused?.status == 429)
            #expect(refused?.problemType == "urn:spezi-account-store:problem:change-limit")
            #expect(Int(refused?.headers["retry-after"] ?? "0") ?? 0 > 0)
            let after = try await server.store.log.statistics()
            #expect(after.records - before.records == UInt64(accepted))
            // The next (UTC) day the account may change again: the fixture's clock starts at 08:00.
            server.fixture.advance(seconds: 57_601)
            let nextDay = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "PATCH", "/v1/account", json: #"{"set":{"name":{"givenName":"Ada"}}}"#,
                headers: ["Authorization": "Bearer \(token)"])
            #expect(nextDay.status == 200)
        }
    }

    @Test("changes per hour: the 11th small change in an hour is refused, the next hour's is not")
    func changesPerHour() async throws {
        var tweaks = StoreTweaks()
        var limits = AccountStoreLimits()
        limits.changesPerAccountPerHour = 10
        tweaks.limits = limits
        try await LiveServer.with(realHashing: false, tweaks: tweaks) { server in
            let (token, _) = try await server.signup(Self.owner, source: "127.0.0.2")
            var statuses: [Int] = []
            for index in 0..<12 {
                statuses.append(
                    try await RawHTTP.send(
                        port: server.port, source: "127.0.0.2", "PATCH", "/v1/account", json: #"{"set":{"name":{"givenName":"A\#(index)"}}}"#,
                        headers: ["Authorization": "Bearer \(token)"]
                    ).status)
            }
            #expect(statuses == Array(repeating: 200, count: 10) + [429, 429])
            server.fixture.advance(seconds: 3_600)
            #expect(
                try await RawHTTP.send(
                    port: server.port, source: "127.0.0.2", "PATCH", "/v1/account", json: #"{"set":{"name":{"givenName":"B"}}}"#,
                    headers: ["Authorization": "Bearer \(token)"]
                ).status == 200)
        }
    }

    @Test("the history comes in pages of at most 500, walked with the cursor; every event once, in order")
    func historyPaged() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let (token, accountId) = try await server.signup(Self.owner, source: "127.0.0.2")
            for index in 0..<30 {
                _ = try await server.store.modify(accountId, try Self.rename("N\(index)"), context: AccountStore.Context(actor: "test"))
            }
            let version = try #require(try await server.store.log.streamVersion(accountId))
            var versions: [UInt64] = []
            var cursor: String?
            var pages = 0
            repeat {
                let path = "/v1/account/history?limit=7" + (cursor.map { "&cursor=\($0)" } ?? "")
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.2", "GET", path, headers: ["Authorization": "Bearer \(token)"])
                #expect(answer.status == 200)
                let entries = try #require(answer.json["entries"] as? [[String: Any]])
                #expect(entries.count <= 7)
                versions += entries.compactMap { ($0["version"] as? NSNumber)?.uint64Value }
                cursor = answer.json["next"] as? String
                pages += 1
            } while cursor != nil && pages < 20
            #expect(versions == Array(1...version))
            // Beyond the largest page: refused, nothing built.
            let tooLarge = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "GET", "/v1/account/history?limit=501", headers: ["Authorization": "Bearer \(token)"])
            #expect(tooLarge.status == 400)
        }
    }

    @Test("a forged <account id>.<43 characters> token with an Idempotency-Key is refused before the account's stream is read")
    func forgedTokenReadsNoStream() async throws {
        var tweaks = StoreTweaks()
        let counting = Mutex<CountingLog?>(nil)
        tweaks.wrapLog = { log in
            let wrapped = CountingLog(log)
            counting.withLock { $0 = wrapped }
            return wrapped
        }
        try await LiveServer.with(realHashing: false, tweaks: tweaks) { server in
            let (_, accountId) = try await server.signup(Self.owner, source: "127.0.0.2")
            for index in 0..<200 {
                _ = try await server.store.modify(accountId, try Self.rename("N\(index)"), context: AccountStore.Context(actor: "test"))
            }
            let log = try #require(counting.withLock { $0 })
            let before = log.reads(of: accountId).count
            let forged = "\(accountId).\(String(repeating: "A", count: 43))"
            for method in ["DELETE", "PATCH"] {
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.3", method, "/v1/account",
                    json: method == "PATCH" ? #"{"set":{"password":"new password 1234"},"currentPassword":"x"}"# : nil,
                    headers: ["Authorization": "Bearer \(forged)", "Idempotency-Key": "key-\(method)"])
                #expect(answer.status == 401)
            }
            // Checking the token reads the account's state (the newest events after the one it keeps),
            // never the stream from its start.
            let reads = log.reads(of: accountId).dropFirst(before)
            #expect(!reads.isEmpty)
            #expect(reads.allSatisfy { $0.from > 200 && $0.records <= 2 }, "\(reads)")
        }
    }

    @Test("an anonymous sign-in replayed with its Idempotency-Key hands out no session, before or after an upgrade")
    func anonymousReplayIssuesNothing() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let first = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "POST", "/v1/accounts/anonymous", headers: ["Idempotency-Key": "the-key-1"])
            #expect(first.status == 201)
            let token = try #require(first.json["token"] as? String)
            let replay = try await RawHTTP.send(
                port: server.port, source: "127.0.0.9", "POST", "/v1/accounts/anonymous", headers: ["Idempotency-Key": "the-key-1"])
            #expect(replay.status == 409)
            #expect(replay.problemType == "urn:spezi-account-store:problem:idempotency-key-used")
            #expect(replay.json["token"] == nil && !replay.body.contains(String(token.split(separator: ".").last ?? "")))
            let upgraded = try await RawHTTP.send(
                port: server.port, source: "127.0.0.2", "POST", "/v1/account/upgrade",
                json: #"{"userId":"\#(Self.owner)","password":"\#(Self.password)","name":{"givenName":"Ada"}}"#,
                headers: ["Authorization": "Bearer \(token)"])
            #expect(upgraded.status == 200)
            let later = try await RawHTTP.send(
                port: server.port, source: "127.0.0.9", "POST", "/v1/accounts/anonymous", headers: ["Idempotency-Key": "the-key-1"])
            #expect(later.status == 409 && later.json["token"] == nil)
        }
    }

    @Test("a bearer token naming the store's own audit stream ($admin) is 401 on every signed-in route, never 500")
    func auditStreamTokenRefused() async throws {
        try await LiveServer.with(realHashing: false) { server in
            try await server.store.recordAdminAction(.verified(intact: true, recordsChecked: 0, headHash: "", problem: nil), by: "root")
            let token = "$admin.\(String(repeating: "A", count: 43))"
            for (method, path) in [("GET", "/v1/account"), ("PATCH", "/v1/account"), ("DELETE", "/v1/account"), ("GET", "/v1/account/events")] {
                let answer = try await RawHTTP.send(
                    port: server.port, source: "127.0.0.2", method, path, json: method == "PATCH" ? #"{"set":{}}"# : nil,
                    headers: ["Authorization": "Bearer \(token)"])
                #expect(answer.status == 401, "\(method) \(path): \(answer.status)")
            }
        }
    }

    @Test("positions: 401 for a stranger, an answer for a signed-in caller or one holding the receipt of an accepted write")
    func positionsNeedACredential() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let (token, _) = try await server.signup(Self.owner, source: "127.0.0.2")
            let head = try await server.store.log.lastPosition()
            for position in [1, head, head + 100] {
                #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/positions/\(position)").status == 401)
            }
            let signedIn = try await RawHTTP.send(port: server.port, "GET", "/v1/positions/\(head)", headers: ["Authorization": "Bearer \(token)"])
            #expect(signedIn.status == 200)
            let receipt = try await server.server.positionReceipt(for: head)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/positions/\(head)?receipt=\(receipt)").status == 200)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/positions/\(head + 1)?receipt=\(receipt)").status == 401)
        }
    }
}
