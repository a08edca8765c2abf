//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import EventLogProtocol
import Foundation
import HTTPTypes
import SpeziAccount
import SpeziAccountStore
import Testing

/// Webhooks end to end: the admin API adds and steers subscriptions, the server POSTs signed
/// events to a receiver on loopback that fails, stalls and comes back.
@Suite("Webhooks delivered to a receiver on loopback")
struct WebhookDeliveryTests {
    static let password = "a long admin password"
    static let admin: HTTPFields = [.authorization: "Basic \(Data("grace:\(password)".utf8).base64EncodedString())"]

    static func configuration() throws -> AccountServerConfiguration {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: password)
        configuration.webhooks.node = "test-node"
        configuration.webhooks.interval = .milliseconds(20)
        configuration.webhooks.timeout = .milliseconds(300)
        configuration.webhooks.retryBase = .milliseconds(10)
        configuration.webhooks.maximumBackoff = .milliseconds(50)
        return configuration
    }

    /// Adds a subscription through the admin API: its id and secret.
    static func subscribe(_ api: APIClient, _ receiver: TestWebhookReceiver, types: String = #"["*"]"#) async throws -> (String, String) {
        let added = try await api.send(
            .post, "/admin/api/webhooks", json: #"{"url":"\#(receiver.url)","eventTypes":\#(types)}"#, headers: admin)
        try #require(added.status == 201, "\(added.text)")
        let subscription = try #require(added.body["subscription"] as? [String: Any])
        return (try #require(subscription["id"] as? String), try #require(added.body["secret"] as? String))
    }

    /// The account events appended after `position`, in log order.
    static func accountEvents(_ store: AccountStore, after position: UInt64) async throws -> [RecordedEvent] {
        try await store.log.read(from: position + 1, limit: 10_000).filter { !$0.streamID.hasPrefix("$") }
    }

    @Test("a receiver that fails, stalls and comes back gets every event at least once, signed, in log order; the node stays ready")
    func failingReceiver() async throws {
        try await TestWebhookReceiver.with { receiver in
            try await ServerFixture().withServer(configuration: try Self.configuration()) { api, store in
                let (id, secret) = try await Self.subscribe(api, receiver)
                let start = try await store.log.lastPosition()
                // Two 500s, a stall past the sender's timeout, a 503: four failed attempts of the first event.
                receiver.plan.withLock { $0 = [.status(500), .status(500), .stall, .status(503)] }
                var accounts: [String] = []
                for index in 0..<4 { accounts.append(try await api.signup("hook\(index)@example.org").accountId) }
                var change = AccountDetails()
                change.name = PersonNameComponents(givenName: "Grace")
                _ = try await store.modify(accounts[0], try AccountModifications(modifiedDetails: change))
                try await store.delete(accounts[1])
                let wanted = try await Self.accountEvents(store, after: start)

                #expect(
                    try await eventually(seconds: 30) {
                        Set(receiver.taken.map(\.id)).isSuperset(of: wanted.map { $0.eventID.uuidString.lowercased() })
                    })
                let taken = receiver.taken
                // In log order (one subscription follows the log in order), so in order per account.
                #expect(taken.map(\.position) == wanted.map(\.position))
                for account in accounts {
                    let positions = taken.filter { $0.accountId == account }.map(\.position)
                    #expect(positions == positions.sorted() && !positions.isEmpty)
                }
                // Every request, refused or not, is signed with the subscription's secret.
                for request in receiver.received.withLock({ $0 }) {
                    let timestamp = try #require(Int64(request.timestamp))
                    #expect(abs(timestamp - Int64(Date().timeIntervalSince1970)) < 300)
                    #expect(try WebhookSignature.sign(secret: secret, id: request.id, timestamp: timestamp, body: request.body) == request.signature)
                }
                #expect(try WebhookSignature.sign(secret: secret, id: "other", timestamp: 1, body: Data()) != taken.first?.signature)
                // No personal data: the user ids are nowhere in what was sent.
                #expect(!receiver.received.withLock { $0 }.contains { String(decoding: $0.body, as: UTF8.self).contains("@example.org") })

                // At least the four planned failures (a loaded machine may time out more often).
                let failures = try await store.log.readStream("$webhooks", from: 1, limit: 1_000).filter { $0.type == "webhook.failed" }
                #expect(failures.count >= 4)
                // The receiver may have the last event before its checkpoint is written: wait for it.
                var listed = try await api.send(.get, "/admin/api/webhooks", headers: Self.admin)
                #expect(
                    try await eventually(seconds: 30) {
                        listed = try await api.send(.get, "/admin/api/webhooks", headers: Self.admin)
                        let subscription = (listed.body["subscriptions"] as? [[String: Any]])?.first
                        return subscription?["failures"] as? Int == 0 && (subscription?["delivered"] as? Int ?? 0) >= wanted.count
                    }, "\(listed.text)")
                let subscription = try #require((listed.body["subscriptions"] as? [[String: Any]])?.first)
                #expect(subscription["id"] as? String == id)
                #expect((subscription["lastError"] as? String) != nil)
                #expect((listed.body["runner"] as? [String: Any])?["node"] as? String == "test-node")
                #expect(listed.text.contains(secret) == false)
                let ready = try await api.send(.get, "/health/ready")
                #expect(ready.status == 200)
                #expect((ready.body["webhooks"] as? [String: Any])?["subscriptions"] as? Int == 1)
            }
        }
    }

    @Test("the OpenAPI document lists exactly the catalogue's event types for a subscription, so schemathesis sends only valid ones")
    func documentedEventTypes() throws {
        let document = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Sources/AccountServer/openapi.yaml"), encoding: .utf8)
        let line = try #require(document.split(separator: "\n").first { $0.contains(#"enum: ["*", "account."#) })
        let listed = Set(
            line.split(separator: "[")[1].dropLast().split(separator: ",").map { $0.trimmingCharacters(in: .init(charactersIn: #" ""#)) })
        #expect(listed == Set(["*"] + AccountEvent.Kind.allCases.map(\.name)))
    }

    @Test("a failing receiver is reported, never a reason to be not ready")
    func failureVisible() async throws {
        try await TestWebhookReceiver.with { receiver in
            try await ServerFixture().withServer(configuration: try Self.configuration()) { api, _ in
                receiver.plan.withLock { $0 = Array(repeating: .status(500), count: 1_000) }
                _ = try await Self.subscribe(api, receiver)
                _ = try await api.signup("failing@example.org")
                #expect(
                    try await eventually(seconds: 30) {
                        let ready = try await api.send(.get, "/health/ready")
                        return (ready.body["webhooks"] as? [String: Any])?["failing"] as? Int == 1 && ready.status == 200
                    })
                let listed = try await api.send(.get, "/admin/api/webhooks", headers: Self.admin)
                let subscription = try #require((listed.body["subscriptions"] as? [[String: Any]])?.first)
                #expect((subscription["lastError"] as? String)?.contains("500") == true && subscription["failingPosition"] != nil)
            }
        }
    }

    @Test("the admin API pauses, resumes, replays and removes; refuses bad input and cross-site calls; every change has the admin as actor")
    func adminAPI() async throws {
        try await TestWebhookReceiver.with { receiver in
            try await ServerFixture().withServer(configuration: try Self.configuration()) { api, store in
                for body in [
                    #"{"url":"ftp://x/","eventTypes":["*"]}"#, #"{"url":"https://x/","eventTypes":["account.nope"]}"#,
                    #"{"url":"https://x/","eventTypes":[]}"#, #"{"url":"https://x/"}"#,
                    #"{"url":"https://x/","eventTypes":["*"],"personalData":null}"#
                ] {
                    #expect(try await api.send(.post, "/admin/api/webhooks", json: body, headers: Self.admin).status == 400)
                }
                #expect(try await api.send(.post, "/admin/api/webhooks/wh_nope/pause", headers: Self.admin).status == 404)
                let crossSite: HTTPFields = [
                    .origin: "https://evil.example", .init("Sec-Fetch-Site")!: "cross-site", .authorization: Self.admin[.authorization]!
                ]
                #expect(
                    try await api.send(.post, "/admin/api/webhooks", json: #"{"url":"\#(receiver.url)","eventTypes":["*"]}"#, headers: crossSite)
                        .status == 403)
                #expect(try await store.log.streamVersion("$webhooks") == nil)

                let (id, _) = try await Self.subscribe(api, receiver, types: #"["account.created"]"#)
                #expect(try await api.send(.post, "/admin/api/webhooks/\(id)/pause", headers: Self.admin).status == 204)
                _ = try await api.signup("paused@example.org")
                try await Task.sleep(for: .milliseconds(300))
                #expect(receiver.taken.isEmpty)
                #expect(try await api.send(.post, "/admin/api/webhooks/\(id)/resume", headers: Self.admin).status == 204)
                #expect(try await eventually(seconds: 30) { receiver.taken.count == 1 })
                let head = try await store.log.lastPosition()
                #expect(
                    try await api.send(.post, "/admin/api/webhooks/\(id)/replay", json: #"{"after":\#(head + 10)}"#, headers: Self.admin).status
                        == 409)
                #expect(try await api.send(.post, "/admin/api/webhooks/\(id)/replay", json: #"{"after":0}"#, headers: Self.admin).status == 204)
                // Delivered again, with the same id.
                #expect(try await eventually(seconds: 30) { receiver.received.withLock { $0.count } == 2 })
                #expect(Set(receiver.received.withLock { $0.map(\.id) }).count == 1)
                #expect(try await api.send(.delete, "/admin/api/webhooks/\(id)", headers: Self.admin).status == 204)
                #expect(try await api.send(.delete, "/admin/api/webhooks/\(id)", headers: Self.admin).status == 404)
                let records = try await store.log.readStream("$webhooks", from: 1, limit: 100)
                let changes = records.filter { !["webhook.delivered", "webhook.failed", "webhook.runner-claimed"].contains($0.type) }
                #expect(changes.map(\.type) == ["webhook.added", "webhook.paused", "webhook.resumed", "webhook.replayed", "webhook.removed"])
                #expect(changes.allSatisfy { $0.metadata.actor == "admin:grace" })
            }
        }
    }
}
