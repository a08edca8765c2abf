//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

/// Webhook subscriptions as a projection of the log, and the runner that delivers them, with a
/// sender in the test's hands (the HTTP sender is tested against a receiver on loopback in
/// AccountServerTests).
@Suite("Webhook subscriptions and their delivery runner")
struct WebhookTests {
    struct Refused: Error {}

    /// What a receiver got: every attempt, in order.
    final class Receiver: Sendable {
        let received = Mutex<[WebhookDelivery]>([])
        /// Positions refused this many more times.
        let refusals = Mutex<[UInt64: Int]>([:])

        func send(_ delivery: WebhookDelivery) throws {
            let refuse = refusals.withLock { refusals -> Bool in
                guard let left = refusals[delivery.message.position], left > 0 else { return false }
                refusals[delivery.message.position] = left - 1
                return true
            }
            if refuse { throw Refused() }
            received.withLock { $0.append(delivery) }
        }

        var positions: [UInt64] { received.withLock { $0.map(\.message.position) } }
    }

    static func runner(_ store: AccountStore, _ receiver: Receiver, node: String = "node-a", lease: Duration = .seconds(30)) -> WebhookRunner {
        WebhookRunner(store: store, node: node, leaseDuration: lease, retryBase: .milliseconds(1), maximumBackoff: .milliseconds(2)) {
            try receiver.send($0)
        }
    }

    /// Steps until `condition` holds (at most 200 steps).
    static func step(_ runner: WebhookRunner, until condition: () throws -> Bool) async throws {
        for _ in 0..<200 {
            if try condition() { return }
            try await runner.step()
            try await Task.sleep(for: .milliseconds(3))
        }
        Issue.record("the runner did not get there in 200 steps")
    }

    @Test("the signature is the one of Standard Webhooks' published test vector")
    func signatureVector() throws {
        let signature = try WebhookSignature.sign(
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Data(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(throws: WebhookSignature.Failure.secret) {
            try WebhookSignature.sign(secret: "whsec_***", id: "x", timestamp: 1, body: Data())
        }
    }

    @Test("every wanted event is delivered after failures, in log order, and the checkpoint survives a reopen and a rebuild")
    func deliversInOrder() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        let (subscription, secret) = try await store.addWebhook(
            url: "http://127.0.0.1:9/hook", eventTypes: ["account.created", "account.deleted", "account.details-modified"],
            includesPersonalData: false, by: "root")
        #expect(secret.hasPrefix("whsec_") && Data(base64Encoded: String(secret.dropFirst(6)))?.count == 24)
        // The secret is sealed in the log.
        #expect(!(try await store.log.read()).contains { String(decoding: $0.payload, as: UTF8.self).contains(secret) })
        var accounts: [String] = []
        for index in 0..<3 { accounts.append(try await store.signup(leland(userId: "hook\(index)@example.org")).accountId) }
        var change = AccountDetails()
        change.name = PersonNameComponents(givenName: "Changed")
        _ = try await store.modify(accounts[0], try AccountModifications(modifiedDetails: change))
        try await store.delete(accounts[1])
        let wanted = try await store.log.read().filter {
            !$0.streamID.hasPrefix("$") && subscription.wants(type: $0.type)
        }.map(\.position)
        #expect(wanted.count == 5)

        let receiver = Receiver()
        // The second wanted event is refused three times: the ones after it wait.
        receiver.refusals.withLock { $0[wanted[1]] = 3 }
        let runner = Self.runner(store, receiver)
        try await Self.step(runner) { receiver.positions.count >= wanted.count }
        #expect(receiver.positions == wanted)
        #expect(receiver.received.withLock { $0.allSatisfy { $0.secret == secret } })
        let state = try await store.webhookState()
        let kept = try #require(state.subscriptions.first)
        #expect(kept.deliveredCount == 5 && kept.failures == 0 && kept.lastError != nil && kept.retryAt == nil)
        #expect(kept.checkpoint >= wanted.last ?? 0)
        let failures = try await store.log.readStream(WebhookRecord.stream, from: 1, limit: 100).filter { $0.type == "webhook.failed" }
        #expect(failures.count == 3)

        // A body names the event and the account, and no personal value without the subscription's consent.
        let first = try #require(receiver.received.withLock { $0.first })
        let body = try #require(try JSONSerialization.jsonObject(with: first.message.body) as? [String: Any])
        #expect(body["type"] as? String == "account.created")
        let data = try #require(body["data"] as? [String: Any])
        #expect(data["accountId"] as? String == accounts[0] && data["changes"] == nil)
        #expect(!String(decoding: first.message.body, as: UTF8.self).contains("hook0@example.org"))

        await store.close()
        store = try await fixture.open()
        #expect(try await store.webhookState().subscriptions == state.subscriptions)
        try await store.rebuildProjection(WebhookProjection.projectionName)
        #expect(try await store.webhookState().subscriptions == state.subscriptions)
        // Nothing is delivered twice after the reopen; a new event is.
        let again = Self.runner(store, receiver)
        try await again.step()
        #expect(receiver.positions == wanted)
        let late = try await store.signup(leland(userId: "late@example.org")).accountId
        try await Self.step(again) { receiver.positions.count == 6 }
        #expect(receiver.received.withLock { $0.last?.message.accountId } == late)
        await store.close()
    }

    @Test("paused, nothing is delivered; resumed, it goes on; a replay delivers again from a position; removed, nothing more")
    func pauseReplayRemove() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let (subscription, _) = try await store.addWebhook(
            url: "https://receiver.example/hook", eventTypes: ["*"], includesPersonalData: false, by: "root")
        let receiver = Receiver()
        let runner = Self.runner(store, receiver)
        _ = try await store.signup(leland(userId: "a@example.org"))
        try await Self.step(runner) { !receiver.positions.isEmpty }
        let firstRound = receiver.positions
        try await store.pauseWebhook(subscription.id, by: "root")
        _ = try await store.signup(leland(userId: "b@example.org"))
        for _ in 0..<5 { try await runner.step() }
        #expect(receiver.positions == firstRound)
        try await store.resumeWebhook(subscription.id, by: "root")
        try await Self.step(runner) { receiver.positions.count > firstRound.count }
        let secondRound = receiver.positions
        #expect(secondRound.count > firstRound.count && secondRound == secondRound.sorted())

        try await store.replayWebhook(subscription.id, after: 0, by: "root")
        try await Self.step(runner) { receiver.positions.count >= secondRound.count * 2 }
        #expect(Array(receiver.positions.suffix(secondRound.count)) == secondRound)
        // The ids stay the event ids: a receiver deduplicates a replay by them.
        let ids = receiver.received.withLock { $0.map(\.message.id) }
        #expect(Set(ids).count == secondRound.count)

        await #expect(throws: WebhookError.replayBeyondHead(after: 1_000_000, head: try await store.log.lastPosition())) {
            try await store.replayWebhook(subscription.id, after: 1_000_000, by: "root")
        }
        try await store.removeWebhook(subscription.id, by: "root")
        _ = try await store.signup(leland(userId: "c@example.org"))
        for _ in 0..<5 { try await runner.step() }
        #expect(receiver.positions.count == secondRound.count * 2)
        #expect(try await store.webhookState().subscriptions.isEmpty)
        await #expect(throws: WebhookError.noSuchSubscription(subscription.id)) { try await store.pauseWebhook(subscription.id, by: "root") }
        await store.close()
    }

    @Test("with personal data, a delivery carries what the event changed; once the account's key is destroyed, it is redacted")
    func personalData() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let (subscription, _) = try await store.addWebhook(
            url: "https://receiver.example/hook", eventTypes: ["account.created"], includesPersonalData: true, by: "root")
        let accountId = try await store.signup(leland(userId: "personal@example.org")).accountId
        let (messages, _) = try await store.webhookMessages(for: subscription, after: subscription.checkpoint)
        let text = String(decoding: try #require(messages.first).body, as: UTF8.self)
        #expect(text.contains("personal@example.org") && text.contains("\"redacted\":false"))
        try await store.delete(accountId)
        let (after, _) = try await store.webhookMessages(for: subscription, after: subscription.checkpoint)
        let redacted = String(decoding: try #require(after.first).body, as: UTF8.self)
        #expect(!redacted.contains("personal@example.org") && redacted.contains("\"redacted\":true"))
        await store.close()
    }

    @Test("one node delivers at a time: a second waits while the lease is held, takes over when it lapses, and the first's late records are ignored")
    func lease() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let (subscription, _) = try await store.addWebhook(
            url: "https://receiver.example/hook", eventTypes: ["account.created"], includesPersonalData: false, by: "root")
        let receiverA = Receiver()
        let receiverB = Receiver()
        let nodeA = Self.runner(store, receiverA, node: "a", lease: .milliseconds(300))
        let nodeB = Self.runner(store, receiverB, node: "b", lease: .milliseconds(300))
        _ = try await store.signup(leland(userId: "one@example.org"))
        try await Self.step(nodeA) { receiverA.positions.count == 1 }
        _ = try await store.signup(leland(userId: "two@example.org"))
        // B steps while A holds the lease: nothing.
        for _ in 0..<3 { #expect(try await nodeB.step() == 0) }
        #expect(receiverB.positions.isEmpty)
        #expect(try await store.webhookState().lease?.node == "a")
        // A goes quiet; once its lease lapses B claims it and delivers what A left.
        try await Task.sleep(for: .milliseconds(400))
        try await Self.step(nodeB) { receiverB.positions.count == 1 }
        #expect(try await store.webhookState().lease?.node == "b")
        // A's late record does not move the checkpoint back or forward.
        let before = try #require(try await store.webhookState().subscriptions.first).checkpoint
        try await store.recordWebhookDelivered(subscription.id, epoch: 0, through: before + 1_000, count: 7, node: "a")
        #expect(try #require(try await store.webhookState().subscriptions.first).checkpoint == before)
        // A sees it lost the lease and delivers nothing.
        #expect(try await nodeA.step() == 0)
        // A claim at a stream version that moved on fails: two nodes cannot both claim one lapse.
        let version = try await store.webhookState().streamVersion
        #expect(try await store.claimWebhookRunner(node: "c", expectedVersion: version - 1) == false)
        await store.close()
    }

    @Test("40 additions released together: exactly the store's limit of subscriptions is kept, the rest refused")
    func concurrentAdditions() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    do {
                        _ = try await store.addWebhook(url: "https://h/", eventTypes: ["*"], includesPersonalData: false, by: "r")
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == AccountStore.maxWebhookSubscriptions)
        #expect(try await store.webhookState().subscriptions.count == AccountStore.maxWebhookSubscriptions)
        let added = try await store.log.readStream(WebhookRecord.stream, from: 1, limit: 100).filter { $0.type == "webhook.added" }
        #expect(added.count == AccountStore.maxWebhookSubscriptions)
        await store.close()
    }

    @Test("bad URLs, unknown event types and the 33rd subscription are refused, and nothing is appended for them")
    func refusals() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        for url in ["ftp://x/y", "not a url", "http://", "http://user:pw@host/", "https://h/" + String(repeating: "a", count: 2_100)] {
            await #expect(throws: WebhookError.self) { try await store.addWebhook(url: url, eventTypes: ["*"], includesPersonalData: false, by: "r") }
        }
        for types in [[], ["account.nope"], Array(repeating: "*", count: 65)] {
            await #expect(throws: WebhookError.self) {
                try await store.addWebhook(url: "https://h/", eventTypes: types, includesPersonalData: false, by: "r")
            }
        }
        #expect(try await store.log.streamVersion(WebhookRecord.stream) == nil)
        for _ in 0..<AccountStore.maxWebhookSubscriptions {
            _ = try await store.addWebhook(url: "https://h/", eventTypes: ["account.created"], includesPersonalData: false, by: "r")
        }
        await #expect(throws: WebhookError.tooManySubscriptions(limit: AccountStore.maxWebhookSubscriptions)) {
            try await store.addWebhook(url: "https://h/", eventTypes: ["account.created"], includesPersonalData: false, by: "r")
        }
        await store.close()
    }
}
