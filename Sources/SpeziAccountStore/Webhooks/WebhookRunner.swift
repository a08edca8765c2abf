//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import Synchronization

/// One delivery to make: the message, the subscription it is for, and the secret to sign it with.
public struct WebhookDelivery: Sendable {
    /// The subscription.
    public let subscription: WebhookSubscription
    /// The event.
    public let message: WebhookMessage
    /// The subscription's signing secret (`whsec_…`).
    public let secret: String
}

/// Follows the log for every webhook subscription and hands each wanted event to `send`, at least
/// once and in log order per subscription (so in order per account), checkpointing in the webhook
/// stream (`webhook.delivered`).
///
/// Every node that shares a log may run one; only the node holding the lease delivers. A node
/// claims the lease (`webhook.runner-claimed`, appended at the stream version it read, so one of
/// two racing claims fails) when nobody holds it, or when an event is waiting for a subscription
/// whose retry is due and the webhook stream has not moved for ``leaseDuration`` since this node
/// saw it waiting: a live holder delivers it (and writes its checkpoint) long before. An idle
/// holder writes nothing, so the lease costs no records while there is nothing to deliver. The
/// projection ignores the delivery records of a node that lost the lease.
///
/// A failed delivery stops its subscription at that event (later events wait: the order holds),
/// records `webhook.failed` and is tried again after exponential backoff with jitter; the other
/// subscriptions go on.
public final class WebhookRunner: Sendable {
    /// What delivers a message: returns when the receiver took it (a 2xx answer), throws otherwise.
    public typealias Send = @Sendable (WebhookDelivery) async throws -> Void

    let store: AccountStore
    /// This node's id in the lease.
    public let node: String
    /// How long a holder that wrote nothing keeps the lease.
    public let leaseDuration: Duration
    /// The first retry's delay; doubled per failure, up to ``maximumBackoff``.
    public let retryBase: Duration
    /// The longest delay between two attempts.
    public let maximumBackoff: Duration
    /// The most events one subscription delivers before its checkpoint is written.
    public let batch: Int
    let send: Send
    let logger: Logger
    /// Per subscription: how far this node scanned past the checkpoint without finding a wanted
    /// event, in the subscription's epoch (kept in memory only: after a restart the scan starts over).
    private let scanned = Mutex<[String: (epoch: UInt64, position: UInt64)]>([:])
    private let holding = Mutex(false)
    /// While another node holds the lease and an event waits: the webhook stream's version when
    /// this node first saw it so, and when.
    private let watch = Mutex<(version: UInt64, since: Date)?>(nil)

    /// A runner.
    ///
    /// - Parameters:
    ///   - store: The store whose log it follows.
    ///   - node: This node's id; keep it across restarts, so that a restarted node goes on at once.
    ///   - leaseDuration: How long a silent holder keeps the lease.
    ///   - retryBase: The first retry's delay.
    ///   - maximumBackoff: The longest delay between attempts.
    ///   - batch: Events per checkpoint.
    ///   - logger: Where deliveries, failures and lease changes are logged.
    ///   - send: Delivers one message.
    public init(
        store: AccountStore, node: String, leaseDuration: Duration = .seconds(30), retryBase: Duration = .seconds(1),
        maximumBackoff: Duration = .seconds(300), batch: Int = 100, logger: Logger = Logger(label: "SpeziAccountStore.webhooks"),
        send: @escaping Send
    ) {
        self.store = store
        self.node = node
        self.leaseDuration = leaseDuration
        self.retryBase = retryBase
        self.maximumBackoff = maximumBackoff
        self.batch = max(1, batch)
        self.logger = logger
        self.send = send
    }

    /// Steps every `interval` until the task is cancelled; a step that fails is logged and the loop
    /// goes on. `afterEachStep` runs after every step (a server records its gauges there).
    ///
    /// - Throws: `CancellationError` when cancelled.
    public func run(interval: Duration, afterEachStep: () async -> Void = {}) async throws {
        while !Task.isCancelled {
            do {
                _ = try await step()
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.error("a webhook delivery step failed", metadata: ["error": "\(error)"])
            }
            await afterEachStep()
            try await Task.sleep(for: interval)
        }
    }

    /// One pass: claims the lease if it is free, then delivers up to ``batch`` events of every
    /// active subscription whose retry is due.
    ///
    /// - Returns: How many events were delivered.
    /// - Throws: The store's errors.
    @discardableResult
    public func step() async throws -> Int {
        let state = try await store.webhookState()
        let now = Date()
        let due = state.subscriptions.filter { !$0.isPaused && ($0.retryAt ?? .distantPast) <= now }
        if state.lease?.node != node {
            if holding.withLock({ holding in
                defer { holding = false }
                return holding
            }) {
                logger.notice("another node runs the webhook deliveries now", metadata: ["node": "\(state.lease?.node ?? "")"])
            }
            guard !due.isEmpty else { return 0 }
            if state.lease != nil, try await !holderLooksGone(state, due: due, now: now) { return 0 }
            guard try await store.claimWebhookRunner(node: node, expectedVersion: state.streamVersion) else { return 0 }
            watch.withLock { $0 = nil }
        }
        if !holding.withLock({ holding in
            defer { holding = true }
            return holding
        }) {
            logger.notice("this node runs the webhook deliveries", metadata: ["node": "\(node)"])
        }
        return await withTaskGroup(of: Int.self) { group in
            for subscription in due {
                group.addTask {
                    do {
                        return try await self.deliver(subscription)
                    } catch is CancellationError {
                        // Shutting down: what was not checkpointed is delivered after the restart.
                        return 0
                    } catch {
                        self.logger.error(
                            "webhook deliveries of a subscription failed", metadata: ["subscription": "\(subscription.id)", "error": "\(error)"])
                        return 0
                    }
                }
            }
            return await group.reduce(0, +)
        }
    }

    /// Whether an event has waited for a due subscription while the webhook stream stood still
    /// for ``leaseDuration``: then the holder is taken to be gone.
    private func holderLooksGone(_ state: WebhookState, due: [WebhookSubscription], now: Date) async throws -> Bool {
        var waiting = false
        for subscription in due {
            let (first, scannedThrough) = try await store.firstWebhookEvent(for: subscription, after: cursor(of: subscription))
            if first != nil {
                waiting = true
                break
            }
            remember(subscription, scannedThrough)
        }
        guard waiting else {
            watch.withLock { $0 = nil }
            return false
        }
        let since = watch.withLock { watch -> Date in
            if watch?.version != state.streamVersion { watch = (state.streamVersion, now) }
            return watch?.since ?? now
        }
        return now >= since.addingTimeInterval(AccountStore.seconds(leaseDuration))
    }

    /// Where the subscription's scan goes on: its checkpoint, or further where this node scanned
    /// past it in the same epoch without finding a wanted event.
    private func cursor(of subscription: WebhookSubscription) -> UInt64 {
        scanned.withLock { scanned in
            guard let known = scanned[subscription.id], known.epoch == subscription.epoch else { return subscription.checkpoint }
            return max(known.position, subscription.checkpoint)
        }
    }

    /// Delivers the subscription's next events, in order, stopping at the first that fails.
    private func deliver(_ subscription: WebhookSubscription) async throws -> Int {
        let cursor = cursor(of: subscription)
        let (messages, scannedThrough) = try await store.webhookMessages(for: subscription, after: cursor)
        guard !messages.isEmpty else {
            remember(subscription, scannedThrough)
            // A subscription to rare types: the checkpoint follows the scan now and then, so a
            // restart does not scan the whole log again (and a checkpoint record is never what
            // makes the next one: it takes 10,000 records).
            if scannedThrough >= subscription.checkpoint + 10_000 {
                try await store.recordWebhookDelivered(subscription.id, epoch: subscription.epoch, through: scannedThrough, count: 0, node: node)
            }
            return 0
        }
        let secret = try store.webhookSecret(of: subscription)
        var delivered: UInt64 = 0
        var through = cursor
        for message in messages.prefix(batch) {
            do {
                try await send(WebhookDelivery(subscription: subscription, message: message, secret: secret))
            } catch {
                if delivered > 0 {
                    try await store.recordWebhookDelivered(subscription.id, epoch: subscription.epoch, through: through, count: delivered, node: node)
                }
                // Cancelled (the server stops): no failure of the receiver's to record.
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                remember(subscription, through)
                let attempt = subscription.failingPosition == message.position ? subscription.failures + 1 : 1
                let wait = RetryBackoff.delay(attempt: Int(min(attempt, 64)), base: retryBase, maximum: maximumBackoff)
                logger.warning(
                    "a webhook delivery failed; it is tried again",
                    metadata: [
                        "subscription": "\(subscription.id)", "position": "\(message.position)", "attempt": "\(attempt)", "retryIn": "\(wait)",
                        "error": "\(error)"
                    ])
                try await store.recordWebhookFailed(
                    subscription.id, epoch: subscription.epoch, position: message.position, attempt: attempt, error: "\(error)",
                    retryAt: Date().addingTimeInterval(AccountStore.seconds(wait)), node: node)
                return Int(delivered)
            }
            delivered += 1
            through = message.position
        }
        if delivered == messages.count { through = scannedThrough }
        try await store.recordWebhookDelivered(subscription.id, epoch: subscription.epoch, through: through, count: delivered, node: node)
        remember(subscription, through)
        return Int(delivered)
    }

    private func remember(_ subscription: WebhookSubscription, _ position: UInt64) {
        scanned.withLock { $0[subscription.id] = (subscription.epoch, position) }
    }
}
