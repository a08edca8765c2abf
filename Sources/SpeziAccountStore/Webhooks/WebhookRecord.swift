//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// What the webhook stream (`$webhooks`) records: the subscriptions administrators add, pause,
/// resume, replay and remove, and what the delivery runner did (which node runs it, what was
/// delivered, what failed). Each is one record with a flat JSON payload (FORMAT.md, "The webhook
/// stream"); the `webhooks` projection folds them into each subscription's settings and checkpoint.
enum WebhookRecord: Sendable, Equatable {
    /// A subscription: where to POST, which event types, whether with personal data, and its
    /// signing secret (sealed, ``AccountStore/sealWebhookSecret(_:subscription:)``).
    case added(subscription: String, url: String, types: [String], personalData: Bool, secret: String, admin: String)
    /// Deliveries stop until ``resumed(subscription:admin:)``.
    case paused(subscription: String, admin: String)
    /// Deliveries go on from the checkpoint; the failure count starts over.
    case resumed(subscription: String, admin: String)
    /// The checkpoint moves to `after`: the events after it are delivered (again).
    case replayed(subscription: String, after: UInt64, admin: String)
    /// The subscription ends.
    case removed(subscription: String, admin: String)
    /// `node` runs the deliveries from now on (appended at the stream version the node read, so
    /// two nodes cannot both claim one free lease).
    case runnerClaimed(node: String)
    /// `node` delivered `count` events of the subscription's `epoch`, and every event up to
    /// position `through` needs no delivery any more.
    case delivered(subscription: String, epoch: UInt64, through: UInt64, count: UInt64, node: String)
    /// `node` could not deliver the event at `position`; it is tried again at `retryAt`.
    case failed(subscription: String, epoch: UInt64, position: UInt64, attempt: UInt64, error: String, retryAt: Date, node: String)

    /// The stream the records are in (no account id starts with `$`).
    static let stream = "$webhooks"

    var typeName: String {
        switch self {
        case .added: "webhook.added"
        case .paused: "webhook.paused"
        case .resumed: "webhook.resumed"
        case .replayed: "webhook.replayed"
        case .removed: "webhook.removed"
        case .runnerClaimed: "webhook.runner-claimed"
        case .delivered: "webhook.delivered"
        case .failed: "webhook.failed"
        }
    }

    var fields: [String: Any] {
        switch self {
        case let .added(subscription, url, types, personalData, secret, admin):
            ["subscription": subscription, "url": url, "types": types, "personalData": personalData, "secret": secret, "admin": admin]
        case let .paused(subscription, admin), let .resumed(subscription, admin), let .removed(subscription, admin):
            ["subscription": subscription, "admin": admin]
        case let .replayed(subscription, after, admin):
            ["subscription": subscription, "after": NSNumber(value: after), "admin": admin]
        case let .runnerClaimed(node):
            ["node": node]
        case let .delivered(subscription, epoch, through, count, node):
            [
                "subscription": subscription, "epoch": NSNumber(value: epoch), "through": NSNumber(value: through),
                "count": NSNumber(value: count), "node": node
            ]
        case let .failed(subscription, epoch, position, attempt, error, retryAt, node):
            [
                "subscription": subscription, "epoch": NSNumber(value: epoch), "position": NSNumber(value: position),
                "attempt": NSNumber(value: attempt), "error": error, "retryAt": NSNumber(value: Int64(retryAt.timeIntervalSince1970 * 1_000)),
                "node": node
            ]
        }
    }

    /// The event to append; runner records carry the actor `webhook-runner`, the others `admin:<name>`.
    func proposed(correlationID: String? = nil) throws -> ProposedEvent {
        let payload = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        let actor: String
        switch self {
        case let .added(_, _, _, _, _, admin), let .paused(_, admin), let .resumed(_, admin), let .replayed(_, _, admin),
            let .removed(_, admin):
            actor = "admin:\(admin)"
        case .runnerClaimed, .delivered, .failed:
            actor = "webhook-runner"
        }
        return ProposedEvent(type: typeName, metadata: EventMetadata(actor: actor, correlationID: correlationID), payload: payload)
    }

    /// The record of a type and JSON payload; nil for another type or a payload that does not fit.
    init?(type: String, payload: UnsafeRawBufferPointer) {
        guard type.hasPrefix("webhook."),
            let object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
        else { return nil }
        func text(_ name: String) -> String? { object[name] as? String }
        func number(_ name: String) -> UInt64? { (object[name] as? NSNumber)?.uint64Value }
        switch type {
        case "webhook.runner-claimed":
            guard let node = text("node") else { return nil }
            self = .runnerClaimed(node: node)
            return
        default:
            break
        }
        guard let subscription = text("subscription") else { return nil }
        switch type {
        case "webhook.added":
            guard let url = text("url"), let types = object["types"] as? [String], let personalData = object["personalData"] as? Bool,
                let secret = text("secret"), let admin = text("admin")
            else { return nil }
            self = .added(subscription: subscription, url: url, types: types, personalData: personalData, secret: secret, admin: admin)
        case "webhook.paused", "webhook.resumed", "webhook.removed":
            guard let admin = text("admin") else { return nil }
            switch type {
            case "webhook.paused": self = .paused(subscription: subscription, admin: admin)
            case "webhook.resumed": self = .resumed(subscription: subscription, admin: admin)
            default: self = .removed(subscription: subscription, admin: admin)
            }
        case "webhook.replayed":
            guard let after = number("after"), let admin = text("admin") else { return nil }
            self = .replayed(subscription: subscription, after: after, admin: admin)
        case "webhook.delivered":
            guard let epoch = number("epoch"), let through = number("through"), let count = number("count"), let node = text("node") else {
                return nil
            }
            self = .delivered(subscription: subscription, epoch: epoch, through: through, count: count, node: node)
        case "webhook.failed":
            guard let epoch = number("epoch"), let position = number("position"), let attempt = number("attempt"),
                let error = text("error"), let retryAt = (object["retryAt"] as? NSNumber)?.int64Value, let node = text("node")
            else { return nil }
            self = .failed(
                subscription: subscription, epoch: epoch, position: position, attempt: attempt, error: error,
                retryAt: Date(timeIntervalSince1970: Double(retryAt) / 1_000), node: node)
        default:
            return nil
        }
    }
}
