//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import Metrics
import Projections
import SpeziAccountStore

/// Readiness, and the answers for writes that are done but not yet visible on this node.
extension AccountRoutes {
    /// `202 {"status":"accepted","position":N}` with `Location: /v1/positions/N`: the command
    /// committed at position N, and this node's details cache has not applied it yet.
    static func accepted(position: UInt64, receipt: String?) -> Response {
        var response =
            (try? json(AcceptedBody(position: position, receipt: receipt), status: .accepted)) ?? Response(status: .accepted)
        response.headers[.location] = "/v1/positions/\(position)" + (receipt.map { "?receipt=\($0)" } ?? "")
        response.headers[.retryAfter] = "1"
        return response
    }

    /// `GET /v1/positions/{position}`: 200 once this node has applied the log up to it, else 202
    /// with `Retry-After`. Only for a signed-in caller or one that holds the position's receipt
    /// (``PositionReceipts``); 401 for anyone else.
    func position(_ request: Request, signedIn: Bool) async throws -> Response {
        // Positions are int64 in the OpenAPI document (no log reaches 2^63 records).
        guard let text = request.uri.path.split(separator: "/").last, let position = UInt64(text), position <= UInt64(Int64.max) else {
            throw Problem.malformed("the position is not a number from 0 to 2^63 - 1")
        }
        let receipt = request.uri.queryParameters.get("receipt")
        if let receipt, receipt.utf8.count > 64 { throw Problem.malformed("a receipt has at most 64 characters") }
        if !signedIn {
            guard let receipt, try await receipts.isValid(receipt, for: position) else { throw Problem.unauthenticated }
        }
        let applied = try await store.hasApplied(position)
        var response = try Self.json(PositionBody(position: position, applied: applied), status: applied ? .ok : .accepted)
        if !applied { response.headers[.retryAfter] = "1" }
        return response
    }

    /// `GET /health/ready`: 200 when this node can serve (it reaches its log within 2 s and no
    /// projection is stopped, failing, or behind without having advanced for
    /// ``AccountServerConfiguration/stallThreshold``), else 503 with the reasons; either way each
    /// projection's position, lag, last error and since when. Also sets the
    /// `account_server_ready` gauge.
    func readiness() async throws -> Response {
        var reasons: [String] = []
        let store = self.store
        let reached: Result<[ProjectionStatus], any Error>? = await withTaskGroup(of: Result<[ProjectionStatus], any Error>?.self) { group in
            group.addTask {
                do {
                    return .success(try await store.projections.status())
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                // Cancelled once the status came: then nobody reads this.
                try? await Task.sleep(for: .seconds(2))
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        var statuses: [ProjectionStatus] = []
        switch reached {
        case nil: reasons.append("the log does not answer within 2 s")
        case let .failure(error): reasons.append("the projections' state cannot be read: \(error)")
        case let .success(reached): statuses = reached
        }
        for status in statuses {
            if let failure = status.failure { reasons.append("projection \(status.name) stopped: \(failure)") }
            if let error = status.storageError { reasons.append("projection \(status.name) cannot advance: \(error)") }
            let threshold =
                Double(configuration.stallThreshold.components.seconds) + Double(configuration.stallThreshold.components.attoseconds) / 1e18
            if status.failure == nil, status.storageError == nil, status.lag > 0, let last = status.lastAdvanced,
                Date().timeIntervalSince(last) > threshold
            {
                reasons.append(
                    "projection \(status.name) is \(status.lag) records behind and has not advanced for \(Int(Date().timeIntervalSince(last))) s")
            }
        }
        // Webhook deliveries are reported, never a reason: a receiver that is down must not take
        // this node out of service.
        let webhooks = reached == nil ? nil : try? await store.webhookState(waitingForHead: false)
        let formatter = ISO8601DateFormatter()
        let body = ReadinessBody(
            status: reasons.isEmpty ? "ready" : "not-ready", reasons: reasons,
            projections: statuses.map { status in
                ReadinessBody.Projection(
                    name: status.name, checkpoint: status.checkpoint, lag: status.lag, failure: status.failure,
                    lastError: status.storageError, since: status.storageErrorSince.map(formatter.string(from:)),
                    lastAdvanced: status.lastAdvanced.map(formatter.string(from:)))
            },
            webhooks: webhooks.map(ReadinessBody.Webhooks.init))
        Gauge(label: "account_server_ready").record(reasons.isEmpty ? 1 : 0)
        if !reasons.isEmpty { logger.notice("not ready", metadata: ["reasons": "\(reasons.joined(separator: "; "))"]) }
        var response = try Self.json(body, status: reasons.isEmpty ? .ok : .serviceUnavailable)
        if !reasons.isEmpty { response.headers[.retryAfter] = "1" }
        return response
    }
}

struct AcceptedBody: Encodable {
    var status = "accepted"
    let position: UInt64
    /// What lets a caller without a session ask about the position (``PositionReceipts``).
    let receipt: String?
}

struct PositionBody: Encodable {
    let position: UInt64
    let applied: Bool
}

struct ReadinessBody: Encodable {
    struct Projection: Encodable {
        let name: String
        let checkpoint: UInt64
        let lag: UInt64
        let failure: String?
        let lastError: String?
        let since: String?
        let lastAdvanced: String?
    }

    let status: String
    let reasons: [String]
    let projections: [Projection]
    /// The webhook deliveries in figures (no URL: this route is open); nil when they could not be read.
    let webhooks: Webhooks?

    struct Webhooks: Encodable {
        let subscriptions: Int
        let paused: Int
        /// Subscriptions whose next event failed and waits for its retry.
        let failing: Int
        /// The most records any active subscription's checkpoint is behind the head.
        let behind: UInt64

        init(_ state: WebhookState) {
            subscriptions = state.subscriptions.count
            paused = state.subscriptions.filter(\.isPaused).count
            failing = state.subscriptions.filter { $0.failures > 0 }.count
            behind = state.subscriptions.filter { !$0.isPaused }.map { $0.behind(head: state.head) }.max() ?? 0
        }
    }
}
