//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Foundation
import IdentityTokens
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import SpeziAccountStore

/// How the server delivers webhook subscriptions.
public struct WebhookSettings: Sendable {
    /// Whether this server runs deliveries at all (every server on a log may: one at a time does).
    public var isEnabled = true
    /// This server's id in the runner's lease; nil: the host name and port. Keep it across
    /// restarts, so a restarted server goes on at once instead of waiting for its old lease to end.
    public var node: String?
    /// How often the runner looks for new events.
    public var interval: Duration = .seconds(1)
    /// How long one delivery may take, the answer's body included.
    public var timeout: Duration = .seconds(10)
    /// How long a node that wrote nothing keeps the lease.
    public var leaseDuration: Duration = .seconds(30)
    /// The first retry's delay, doubled per failure.
    public var retryBase: Duration = .seconds(1)
    /// The longest delay between two attempts.
    public var maximumBackoff: Duration = .seconds(300)
    /// The most of a receiver's answer that is read (and then dropped).
    public var maxResponseBytes = 16 * 1024

    /// The defaults.
    public init() {}
}

/// Why a receiver did not take a delivery.
enum WebhookSendError: Error, CustomStringConvertible {
    case status(Int)
    case timedOut(Duration)

    var description: String {
        switch self {
        case let .status(code): "the receiver answered \(code)"
        case let .timedOut(limit): "no complete answer within \(limit)"
        }
    }
}

/// Runs the store's ``WebhookRunner`` with an HTTP sender: each message POSTed as JSON with the
/// Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), redirects
/// not followed, the whole exchange bounded by ``WebhookSettings/timeout``, and only a 2xx answer
/// taken as delivered.
struct WebhookDeliveryService: Service {
    let store: AccountStore
    let settings: WebhookSettings
    let node: String
    let logger: Logger

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5))
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let settings = settings
        let runner = WebhookRunner(
            store: store, node: node, leaseDuration: settings.leaseDuration, retryBase: settings.retryBase,
            maximumBackoff: settings.maximumBackoff, logger: logger
        ) { delivery in
            do {
                try await Self.post(delivery, client: client, settings: settings)
                Counter(label: "account_webhook_deliveries_total", dimensions: [("result", "delivered")]).increment()
            } catch {
                Counter(label: "account_webhook_deliveries_total", dimensions: [("result", "failed")]).increment()
                throw error
            }
        }
        // Shutdown cancels the loop: what was delivered but not checkpointed is delivered again
        // after the restart (at least once).
        try? await cancelWhenGracefulShutdown {
            var gaugesDue = ContinuousClock.now
            try await runner.run(interval: settings.interval) {
                guard ContinuousClock.now >= gaugesDue else { return }
                gaugesDue = .now + .seconds(5)
                await recordGauges()
            }
        }
        try await client.shutdown()
    }

    /// The backlog and failures of each subscription (at most 32, so the label stays bounded).
    private func recordGauges() async {
        guard let state = try? await store.webhookState(waitingForHead: false) else { return }
        for subscription in state.subscriptions {
            let dimensions = [("subscription", subscription.id)]
            let behind = subscription.isPaused ? 0 : subscription.behind(head: state.head)
            Gauge(label: "account_webhook_behind_records", dimensions: dimensions).record(Int64(clamping: behind))
            Gauge(label: "account_webhook_failures", dimensions: dimensions).record(Int64(clamping: subscription.failures))
        }
    }

    static func post(_ delivery: WebhookDelivery, client: HTTPClient, settings: WebhookSettings) async throws {
        let timestamp = Int64(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: delivery.subscription.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "SpeziAccountStore-Webhooks/1")
        request.headers.add(name: "webhook-id", value: delivery.message.id)
        request.headers.add(name: "webhook-timestamp", value: "\(timestamp)")
        request.headers.add(
            name: "webhook-signature",
            value: try WebhookSignature.sign(secret: delivery.secret, id: delivery.message.id, timestamp: timestamp, body: delivery.message.body))
        request.body = .bytes(ByteBuffer(bytes: delivery.message.body))
        let prepared = request
        let timeout = settings.timeout
        let maxBytes = settings.maxResponseBytes
        let status = try await withDeadline(timeout, timedOut: WebhookSendError.timedOut(timeout)) {
            let response = try await client.execute(prepared, timeout: TimeAmount(timeout))
            // Read (and drop) at most maxBytes: a receiver cannot make the server hold more.
            var read = 0
            for try await part in response.body {
                read += part.readableBytes
                if read > maxBytes { break }
            }
            return Int(response.status.code)
        }
        guard (200..<300).contains(status) else { throw WebhookSendError.status(status) }
    }
}
