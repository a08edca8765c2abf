//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Projections

/// A webhook subscription as the `webhooks` projection folds it from the webhook stream.
public struct WebhookSubscription: Sendable, Equatable, Codable {
    /// Its id (`wh_` and 24 hex digits).
    public let id: String
    /// Where events are POSTed.
    public let url: String
    /// The event types delivered (`*`: every account event type).
    public let eventTypes: [String]
    /// Whether a delivery carries what the event changed (values, user ids), while the account's
    /// key is live; without it, a delivery names the event and the account only.
    public let includesPersonalData: Bool
    /// The administrator who added it.
    public let createdBy: String
    /// When it was added.
    public let createdAt: Date
    /// Paused by an administrator: nothing is delivered until it is resumed.
    public internal(set) var isPaused = false
    /// Every event up to this log position needs no delivery any more.
    public internal(set) var checkpoint: UInt64
    /// Counts replays and resumptions; a delivery record of an older epoch does not move the checkpoint.
    public internal(set) var epoch: UInt64 = 0
    /// Events delivered so far.
    public internal(set) var deliveredCount: UInt64 = 0
    /// Failed attempts since the last delivery.
    public internal(set) var failures: UInt64 = 0
    /// The last failure's error, kept after a later delivery.
    public internal(set) var lastError: String?
    /// When the last failure happened.
    public internal(set) var lastFailureAt: Date?
    /// The position whose delivery failed last, while it still fails.
    public internal(set) var failingPosition: UInt64?
    /// No attempt before this time (after a failure).
    public internal(set) var retryAt: Date?
    /// The signing secret, sealed as the log holds it.
    var sealedSecret: String

    /// The records after the checkpoint when the log's head is `head` (an upper bound of the
    /// backlog: not every record is wanted).
    public func behind(head: UInt64) -> UInt64 {
        head > checkpoint ? head - checkpoint : 0
    }

    /// Whether a record of this type is delivered.
    public func wants(type: String) -> Bool {
        eventTypes.contains("*") || eventTypes.contains(type)
    }
}

/// Which node runs the deliveries: the one whose `webhook.runner-claimed` came last, since `at`
/// (the time of its last runner record).
public struct WebhookRunnerLease: Sendable, Equatable, Codable {
    /// The node's id.
    public let node: String
    /// The time of the node's last runner record.
    public internal(set) var at: Date
}

/// The `webhooks` projection: each subscription's settings, checkpoint and failures, and the
/// runner's lease, folded from the webhook stream. Delivery and failure records of a node that
/// does not hold the lease are ignored (a node that lost the lease cannot move a checkpoint), as
/// are those of an older epoch (a replay is not undone by a delivery that was in flight).
///
/// Keys of `subscriptions` are subscription ids, values the JSON of ``WebhookSubscription``;
/// `runner` holds `lease` (the JSON of ``WebhookRunnerLease``) and `version` (the webhook
/// stream's last version, 8 bytes big-endian).
struct WebhookProjection: Projection {
    static let projectionName = "webhooks"

    var name: String { Self.projectionName }
    var fingerprint: String { "webhooks v1" }
    var databaseNames: [String] { ["subscriptions", "runner"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        // Every record passes here: compare the stream's bytes before making anything.
        let isWebhookStream = record.withStreamIDBytes { $0.elementsEqual(WebhookRecord.stream.utf8) }
        guard isWebhookStream else { return }
        var version = record.streamVersion.bigEndian
        try state.put("runner", key: Array("version".utf8), value: withUnsafeBytes(of: &version) { Array($0) })
        guard let event = record.withPayload({ WebhookRecord(type: record.type, payload: $0) }) else { return }
        switch event {
        case let .added(id, url, types, personalData, secret, admin):
            // Deliveries start with what comes after the subscription.
            let subscription = WebhookSubscription(
                id: id, url: url, eventTypes: types, includesPersonalData: personalData, createdBy: admin, createdAt: record.timestamp,
                checkpoint: record.position, sealedSecret: secret)
            try Self.put(subscription, in: state)
        case let .paused(id, _):
            try Self.update(id, in: state) { $0.isPaused = true }
        case let .resumed(id, _):
            try Self.update(id, in: state) { subscription in
                subscription.isPaused = false
                subscription.epoch += 1
                subscription.failures = 0
                subscription.retryAt = nil
                subscription.failingPosition = nil
            }
        case let .replayed(id, after, _):
            try Self.update(id, in: state) { subscription in
                subscription.checkpoint = after
                subscription.epoch += 1
                subscription.failures = 0
                subscription.retryAt = nil
                subscription.failingPosition = nil
            }
        case let .removed(id, _):
            _ = try state.delete("subscriptions", key: Array(id.utf8))
        case let .runnerClaimed(node):
            try Self.putLease(WebhookRunnerLease(node: node, at: record.timestamp), in: state)
        case let .delivered(id, epoch, through, count, node):
            guard try Self.holdsLease(node, at: record.timestamp, in: state) else { return }
            try Self.update(id, in: state) { subscription in
                guard subscription.epoch == epoch else { return }
                subscription.checkpoint = max(subscription.checkpoint, through)
                subscription.deliveredCount += count
                subscription.failures = 0
                subscription.retryAt = nil
                subscription.failingPosition = nil
            }
        case let .failed(id, epoch, position, attempt, error, retryAt, node):
            guard try Self.holdsLease(node, at: record.timestamp, in: state) else { return }
            try Self.update(id, in: state) { subscription in
                guard subscription.epoch == epoch else { return }
                subscription.failures = attempt
                subscription.lastError = error
                subscription.lastFailureAt = record.timestamp
                subscription.failingPosition = position
                subscription.retryAt = retryAt
            }
        }
    }

    /// Whether `node` holds the lease; if so, its time moves to `time`.
    private static func holdsLease(_ node: String, at time: Date, in state: ProjectionState) throws -> Bool {
        guard var lease = try lease(in: state), lease.node == node else { return false }
        lease.at = time
        try putLease(lease, in: state)
        return true
    }

    static func lease(in state: ProjectionState) throws -> WebhookRunnerLease? {
        try state.get("runner", key: Array("lease".utf8)).map { try JSONDecoder().decode(WebhookRunnerLease.self, from: Data($0)) }
    }

    static func streamVersion(in state: ProjectionState) throws -> UInt64 {
        guard let bytes = try state.get("runner", key: Array("version".utf8)), bytes.count == 8 else { return 0 }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func subscriptions(in state: ProjectionState) throws -> [WebhookSubscription] {
        var found: [WebhookSubscription] = []
        try state.forEach("subscriptions") { _, value in
            found.append(try JSONDecoder().decode(WebhookSubscription.self, from: Data(value)))
            return true
        }
        return found
    }

    private static func putLease(_ lease: WebhookRunnerLease, in state: ProjectionState) throws {
        try state.put("runner", key: Array("lease".utf8), value: Array(try JSONEncoder().encode(lease)))
    }

    private static func put(_ subscription: WebhookSubscription, in state: ProjectionState) throws {
        try state.put("subscriptions", key: Array(subscription.id.utf8), value: Array(try JSONEncoder().encode(subscription)))
    }

    private static func update(_ id: String, in state: ProjectionState, _ change: (inout WebhookSubscription) -> Void) throws {
        guard let bytes = try state.get("subscriptions", key: Array(id.utf8)) else { return }
        var subscription = try JSONDecoder().decode(WebhookSubscription.self, from: Data(bytes))
        change(&subscription)
        try put(subscription, in: state)
    }
}
