//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation

/// Why a webhook request was refused.
public enum WebhookError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not an `http` or `https` URL with a host, or longer than ``AccountStore/maxWebhookURLBytes``.
    case invalidURL(String)
    /// No event type of this name (nor `*`), or no type at all, or more than 64.
    case invalidEventTypes(String)
    /// The store has ``AccountStore/maxWebhookSubscriptions`` subscriptions already.
    case tooManySubscriptions(limit: Int)
    /// No subscription has this id.
    case noSuchSubscription(String)
    /// A replay must start at or before the log's head.
    case replayBeyondHead(after: UInt64, head: UInt64)

    public var description: String {
        switch self {
        case let .invalidURL(reason): "the webhook URL is refused: \(reason)"
        case let .invalidEventTypes(reason): "the event types are refused: \(reason)"
        case let .tooManySubscriptions(limit): "the store has \(limit) webhook subscriptions, the most it keeps: remove one first"
        case let .noSuchSubscription(id): "no webhook subscription \"\(id)\""
        case let .replayBeyondHead(after, head): "a replay after position \(after) starts beyond the log's head (\(head))"
        }
    }
}

/// The webhook subscriptions and the delivery runner's lease, as the `webhooks` projection has
/// them once it applied the log up to ``head``.
public struct WebhookState: Sendable, Equatable {
    /// Every subscription, in id order.
    public let subscriptions: [WebhookSubscription]
    /// Which node runs the deliveries, if any ever did.
    public let lease: WebhookRunnerLease?
    /// The webhook stream's last version (what a runner claim is appended at).
    public let streamVersion: UInt64
    /// The log's head when it was read.
    public let head: UInt64
}

/// An event to deliver to one subscription: the body Standard Webhooks describes (`type`,
/// `timestamp`, `data`) and the id its receiver deduplicates by.
public struct WebhookMessage: Sendable, Equatable {
    /// The event's id (`webhook-id`): the same for every attempt and every replay.
    public let id: String
    /// The event's log position.
    public let position: UInt64
    /// The account the event belongs to.
    public let accountId: String
    /// The event type.
    public let type: String
    /// The JSON body.
    public let body: Data
}

extension AccountStore {
    /// The most subscriptions a store keeps.
    public static let maxWebhookSubscriptions = 32
    /// The longest URL a subscription takes, in bytes.
    public static let maxWebhookURLBytes = 2_048

    /// Adds a webhook subscription (`webhook.added`). Deliveries start with the first event
    /// appended after it; replay (``replayWebhook(_:after:by:correlationID:)``) to deliver earlier ones.
    ///
    /// - Parameters:
    ///   - url: Where to POST: `http` or `https`, with a host.
    ///   - eventTypes: Account event types (FORMAT.md's catalogue), or `*` for all; 1 to 64.
    ///   - includesPersonalData: Whether deliveries carry what each event changed, while the account's key is live.
    ///   - admin: The administrator's name.
    ///   - correlationID: The request it belongs to.
    /// - Returns: The subscription and its signing secret (`whsec_…`), which is shown only here.
    /// - Throws: ``WebhookError``, ``AccountStoreError/tooMuchContention(accountId:attempts:)``
    ///   when the webhook stream kept moving, or the log's errors.
    public func addWebhook(
        url: String, eventTypes: [String], includesPersonalData: Bool, by admin: String, correlationID: String? = nil
    ) async throws -> (subscription: WebhookSubscription, secret: String) {
        try Self.checkWebhookURL(url)
        let types = try Self.checkEventTypes(eventTypes)
        let id = "wh_" + SymmetricKey(size: SymmetricKeySize(bitCount: 96)).withUnsafeBytes { Array($0) }.hexString
        let secret = "whsec_" + SymmetricKey(size: SymmetricKeySize(bitCount: 192)).withUnsafeBytes { Data($0) }.base64EncodedString()
        let record = WebhookRecord.added(
            subscription: id, url: url, types: types, personalData: includesPersonalData, secret: try sealWebhookSecret(secret, subscription: id),
            admin: admin)
        // Counted and appended at the stream's version: of additions released together, those that
        // would pass the limit find the stream moved, count again and are refused.
        var attempt = 0
        while true {
            let state = try await webhookState()
            guard state.subscriptions.count < Self.maxWebhookSubscriptions else {
                throw WebhookError.tooManySubscriptions(limit: Self.maxWebhookSubscriptions)
            }
            do {
                try await appendWebhookRecord(
                    record, correlationID: correlationID, expectedVersion: state.streamVersion == 0 ? .noStream : .exact(state.streamVersion))
                break
            } catch EventLogError.wrongExpectedVersion {
                attempt += 1
                guard attempt < options.maxConflictRetries else {
                    throw AccountStoreError.tooMuchContention(accountId: WebhookRecord.stream, attempts: attempt)
                }
                try await Task.sleep(for: Self.conflictBackoff(attempt: attempt))
            }
        }
        guard let added = try await webhookState().subscriptions.first(where: { $0.id == id }) else {
            throw WebhookError.noSuchSubscription(id)
        }
        return (added, secret)
    }

    /// Pauses a subscription (`webhook.paused`): nothing is delivered until it is resumed.
    ///
    /// - Throws: ``WebhookError/noSuchSubscription(_:)``, or the log's errors.
    public func pauseWebhook(_ id: String, by admin: String, correlationID: String? = nil) async throws {
        try await requireWebhook(id)
        try await appendWebhookRecord(.paused(subscription: id, admin: admin), correlationID: correlationID)
    }

    /// Resumes a subscription (`webhook.resumed`), and retries its failing event at once.
    ///
    /// - Throws: ``WebhookError/noSuchSubscription(_:)``, or the log's errors.
    public func resumeWebhook(_ id: String, by admin: String, correlationID: String? = nil) async throws {
        try await requireWebhook(id)
        try await appendWebhookRecord(.resumed(subscription: id, admin: admin), correlationID: correlationID)
    }

    /// Moves a subscription's checkpoint to `after` (`webhook.replayed`): every matching event
    /// after that position is delivered, again if it was before.
    ///
    /// - Throws: ``WebhookError``, or the log's errors.
    public func replayWebhook(_ id: String, after: UInt64, by admin: String, correlationID: String? = nil) async throws {
        try await requireWebhook(id)
        let head = try await log.lastPosition()
        guard after <= head else { throw WebhookError.replayBeyondHead(after: after, head: head) }
        try await appendWebhookRecord(.replayed(subscription: id, after: after, admin: admin), correlationID: correlationID)
    }

    /// Removes a subscription (`webhook.removed`).
    ///
    /// - Throws: ``WebhookError/noSuchSubscription(_:)``, or the log's errors.
    public func removeWebhook(_ id: String, by admin: String, correlationID: String? = nil) async throws {
        try await requireWebhook(id)
        try await appendWebhookRecord(.removed(subscription: id, admin: admin), correlationID: correlationID)
    }

    /// The subscriptions and the runner's lease, once the `webhooks` projection applied the log as
    /// it is now.
    ///
    /// - Parameter waitingForHead: Whether to wait for the projection to reach the log's head
    ///   (false: as it is, for a health check that must not wait).
    /// - Throws: The log's and the projection store's errors.
    public func webhookState(waitingForHead: Bool = true) async throws -> WebhookState {
        let head = try await log.lastPosition()
        if waitingForHead { try await projections.waitUntilApplied(WebhookProjection.projectionName, position: head) }
        return try projections.read(WebhookProjection.projectionName) { state in
            WebhookState(
                subscriptions: try WebhookProjection.subscriptions(in: state), lease: try WebhookProjection.lease(in: state),
                streamVersion: try WebhookProjection.streamVersion(in: state), head: head)
        }
    }

    /// The subscription's signing secret, in the clear.
    ///
    /// - Throws: A sealing error when the secret does not open (another vault).
    public func webhookSecret(of subscription: WebhookSubscription) throws -> String {
        let stored = subscription.sealedSecret
        if stored.hasPrefix("plain:") { return String(stored.dropFirst(6)) }
        guard stored.hasPrefix("v1:"), let sealed = Data(base64Encoded: String(stored.dropFirst(3))), let key = webhookSecretKey else {
            throw Sealing.Failure.damaged("not a sealed webhook secret, or no vault to open it")
        }
        let bytes = try sealed.withUnsafeBytes { try Sealing.open($0, key: key, accountId: subscription.id, label: "webhook-secret") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The events after `position` that `subscription` wants, read from at most `scanLimit`
    /// records of the log: account events only (no `$` stream), of its types.
    ///
    /// - Returns: The messages, in log order, and the last position read (the scan goes on after it).
    /// - Throws: The log's errors.
    public func webhookMessages(
        for subscription: WebhookSubscription, after position: UInt64, scanLimit: Int = 500
    ) async throws -> (messages: [WebhookMessage], scannedThrough: UInt64) {
        let records = try await log.read(from: position + 1, limit: scanLimit)
        var messages: [WebhookMessage] = []
        for record in records where !record.streamID.hasPrefix("$") && subscription.wants(type: record.type) {
            messages.append(try await webhookMessage(for: record, personalData: subscription.includesPersonalData))
        }
        return (messages, records.last?.position ?? position)
    }

    /// The position of the first event after `position` that `subscription` wants, within
    /// `scanLimit` records (nil when there is none there), and the last position read; no body is made.
    ///
    /// - Throws: The log's errors.
    public func firstWebhookEvent(
        for subscription: WebhookSubscription, after position: UInt64, scanLimit: Int = 500
    ) async throws -> (position: UInt64?, scannedThrough: UInt64) {
        let records = try await log.read(from: position + 1, limit: scanLimit)
        let first = records.first { !$0.streamID.hasPrefix("$") && subscription.wants(type: $0.type) }
        return (first?.position, records.last?.position ?? position)
    }

    /// Claims the delivery runner's lease for `node` (`webhook.runner-claimed`), appended at the
    /// webhook stream's version `expectedVersion`: false, and nothing appended, when the stream
    /// moved since (another node may have claimed it).
    ///
    /// - Throws: The log's errors other than a version conflict.
    public func claimWebhookRunner(node: String, expectedVersion: UInt64) async throws -> Bool {
        do {
            _ = try await log.append(
                [try WebhookRecord.runnerClaimed(node: node).proposed()], to: WebhookRecord.stream,
                expectedVersion: expectedVersion == 0 ? .noStream : .exact(expectedVersion), claims: [], releases: [])
            return true
        } catch EventLogError.wrongExpectedVersion {
            return false
        }
    }

    /// Records that `node` delivered `count` events of `subscription` (`webhook.delivered`):
    /// its checkpoint moves to `through` if `node` still holds the lease and no replay or resumption
    /// came since `epoch`.
    ///
    /// - Throws: The log's errors.
    public func recordWebhookDelivered(_ subscription: String, epoch: UInt64, through: UInt64, count: UInt64, node: String) async throws {
        try await appendWebhookRecord(.delivered(subscription: subscription, epoch: epoch, through: through, count: count, node: node))
    }

    /// Records a failed delivery (`webhook.failed`): the event at `position` is tried again from `retryAt`.
    ///
    /// - Throws: The log's errors.
    public func recordWebhookFailed(
        _ subscription: String, epoch: UInt64, position: UInt64, attempt: UInt64, error: String, retryAt: Date, node: String
    ) async throws {
        try await appendWebhookRecord(
            .failed(
                subscription: subscription, epoch: epoch, position: position, attempt: attempt, error: String(error.prefix(300)),
                retryAt: retryAt, node: node))
    }

    // MARK: Helpers

    private func appendWebhookRecord(
        _ record: WebhookRecord, correlationID: String? = nil, expectedVersion: ExpectedVersion = .any
    ) async throws {
        let result = try await log.append(
            [try record.proposed(correlationID: correlationID)], to: WebhookRecord.stream, expectedVersion: expectedVersion, claims: [],
            releases: [])
        try await projections.waitUntilApplied(WebhookProjection.projectionName, position: result.positions.upperBound)
    }

    private func requireWebhook(_ id: String) async throws {
        guard try await webhookState().subscriptions.contains(where: { $0.id == id }) else { throw WebhookError.noSuchSubscription(id) }
    }

    /// The message of one account event: its type, commit time and ids; with personal data, what
    /// it changed (from the account's history, so nothing of an account whose key is destroyed).
    private func webhookMessage(for record: RecordedEvent, personalData: Bool) async throws -> WebhookMessage {
        var data: [String: Any] = [
            "accountId": record.streamID, "position": NSNumber(value: record.position), "streamVersion": NSNumber(value: record.streamVersion),
            "eventId": record.eventID.uuidString.lowercased()
        ]
        if personalData {
            var entry: AccountHistoryEntry?
            try await forEachHistoryEntry(of: record.streamID, after: record.streamVersion - 1, limit: 1) { entry = $0 }
            if let entry {
                data["redacted"] = entry.isRedacted
                data["changes"] = entry.changes.map { change -> [String: Any] in
                    ["key": change.key, "old": change.old ?? NSNull(), "new": change.new ?? NSNull()]
                }
            }
        }
        let body: [String: Any] = ["type": record.type, "timestamp": record.timestamp.formatted(.iso8601), "data": data]
        return WebhookMessage(
            id: record.eventID.uuidString.lowercased(), position: record.position, accountId: record.streamID, type: record.type,
            body: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    /// The key webhook secrets are sealed under: derived from the vault's claim secret.
    private var webhookSecretKey: SymmetricKey? {
        guard let vault = accounts.vault else { return nil }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: vault.claimSecret, info: Array("spezi-account-store webhook secrets".utf8), outputByteCount: 32)
    }

    func sealWebhookSecret(_ secret: String, subscription: String) throws -> String {
        guard let key = webhookSecretKey else { return "plain:" + secret }
        let sealed = try Sealing.seal(Array(secret.utf8), key: key, accountId: subscription, label: "webhook-secret")
        return "v1:" + Data(sealed).base64EncodedString()
    }

    static func checkWebhookURL(_ url: String) throws {
        guard url.utf8.count <= maxWebhookURLBytes else { throw WebhookError.invalidURL("longer than \(maxWebhookURLBytes) bytes") }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw WebhookError.invalidURL("not an http or https URL") }
        guard let host = components.host, !host.isEmpty else { throw WebhookError.invalidURL("no host") }
        guard components.user == nil, components.password == nil else { throw WebhookError.invalidURL("credentials in the URL") }
    }

    static func checkEventTypes(_ types: [String]) throws -> [String] {
        guard (1...64).contains(types.count) else { throw WebhookError.invalidEventTypes("name 1 to 64 event types, or *") }
        let known = Set(AccountEvent.Kind.allCases.map(\.name))
        for type in types where type != "*" && !known.contains(type) {
            throw WebhookError.invalidEventTypes("no account event type \"\(type.prefix(80))\"")
        }
        return Array(Set(types)).sorted()
    }
}
