//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import SpeziAccountStore

/// The webhook subscriptions under `/admin/api/webhooks`: list them with their checkpoints and
/// failures, add one (its secret is answered once), pause, resume, replay from a position, remove.
/// Each change is a record of the webhook stream with `admin:<name>` as its actor.
extension AdminRoutes {
    /// `GET /admin/api/webhooks`: every subscription, the log's head and which node delivers.
    func listWebhooks() async throws -> Response {
        let state = try await store.webhookState()
        return try AccountRoutes.json(
            WebhooksBody(
                subscriptions: state.subscriptions.map { WebhookBody($0, head: state.head) }, head: state.head,
                runner: state.lease.map { WebhooksBody.Runner(node: $0.node, since: JSONCoding.timestamp($0.at)) }))
    }

    /// `POST /admin/api/webhooks` with `{"url", "eventTypes", "personalData"}`: 201 with the
    /// subscription and its `secret`, shown only in this answer.
    func addWebhook(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        struct AddBody: Decodable {
            let url: String
            let eventTypes: [String]
            /// Absent is false; null is refused, as the document says.
            let personalData: Bool

            enum CodingKeys: String, CodingKey { case url, eventTypes, personalData }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                url = try container.decode(String.self, forKey: .url)
                eventTypes = try container.decode([String].self, forKey: .eventTypes)
                personalData = container.contains(.personalData) ? try container.decode(Bool.self, forKey: .personalData) : false
            }
        }
        guard let body = try? JSONDecoder().decode(AddBody.self, from: try await jsonBody(request)) else {
            throw Problem.malformed("the body must be {\"url\": \"https://…\", \"eventTypes\": [\"account.created\", …], \"personalData\": false}")
        }
        let (subscription, secret) = try await onWebhook {
            try await store.addWebhook(
                url: body.url, eventTypes: body.eventTypes, includesPersonalData: body.personalData, by: context.admin,
                correlationID: correlation(request))
        }
        logger.notice(
            "webhook subscription added", metadata: ["subscription": "\(subscription.id)", "url": "\(subscription.url)", "admin": "\(context.admin)"])
        return try AccountRoutes.json(AddedWebhookBody(subscription: WebhookBody(subscription, head: nil), secret: secret), status: .created)
    }

    /// `POST /admin/api/webhooks/{id}/pause`, `…/resume`, `DELETE /admin/api/webhooks/{id}`: 204.
    func changeWebhook(_ request: Request, _ context: AdminRequestContext, _ change: WebhookChange) async throws -> Response {
        let id = try webhookParameter(context)
        let correlationID = correlation(request)
        try await onWebhook {
            switch change {
            case .pause: try await store.pauseWebhook(id, by: context.admin, correlationID: correlationID)
            case .resume: try await store.resumeWebhook(id, by: context.admin, correlationID: correlationID)
            case .remove: try await store.removeWebhook(id, by: context.admin, correlationID: correlationID)
            }
        }
        logger.notice("webhook subscription changed", metadata: ["subscription": "\(id)", "change": "\(change)", "admin": "\(context.admin)"])
        return Response(status: .noContent)
    }

    /// `POST /admin/api/webhooks/{id}/replay` with `{"after": N}`: the events after position N
    /// are delivered (again); 204.
    func replayWebhook(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        struct ReplayBody: Decodable { let after: UInt64 }
        let id = try webhookParameter(context)
        guard let body = try? JSONDecoder().decode(ReplayBody.self, from: try await jsonBody(request)) else {
            throw Problem.malformed("the body must be {\"after\": N}, a log position")
        }
        try await onWebhook { try await store.replayWebhook(id, after: body.after, by: context.admin, correlationID: correlation(request)) }
        logger.notice("webhook subscription replayed", metadata: ["subscription": "\(id)", "after": "\(body.after)", "admin": "\(context.admin)"])
        return Response(status: .noContent)
    }

    enum WebhookChange: String { case pause, resume, remove }

    private func webhookParameter(_ context: AdminRequestContext) throws -> String {
        guard let id = context.parameters.get("id"), id.utf8.count <= 64, !id.containsNUL else { throw Problem.noSuchWebhook }
        return id
    }

    /// Runs a webhook command, answering its refusals as problems.
    private func onWebhook<T>(_ command: () async throws -> T) async throws -> T {
        do {
            return try await command()
        } catch let error as WebhookError {
            switch error {
            case .noSuchSubscription: throw Problem.noSuchWebhook
            case .tooManySubscriptions: throw Problem("too-many-webhooks", .conflict, "The store keeps no more subscriptions.", detail: "\(error)")
            case .replayBeyondHead:
                throw Problem("replay-beyond-head", .conflict, "The log has no such position yet.", detail: "\(error)")
            case .invalidURL, .invalidEventTypes: throw Problem.malformed("\(error)")
            }
        }
    }
}

extension Problem {
    static let noSuchWebhook = Problem("no-such-webhook", .notFound, "No webhook subscription has this id.")
}

/// A subscription as the console and scripts see it (never its secret).
struct WebhookBody: Encodable {
    let id: String
    let url: String
    let eventTypes: [String]
    let personalData: Bool
    let paused: Bool
    let checkpoint: UInt64
    /// Records after the checkpoint (not all of them are wanted: an upper bound of the backlog).
    let behind: UInt64?
    let delivered: UInt64
    let failures: UInt64
    let lastError: String?
    let lastFailure: String?
    let failingPosition: UInt64?
    let retryAt: String?
    let createdBy: String
    let createdAt: String

    init(_ subscription: WebhookSubscription, head: UInt64?) {
        id = subscription.id
        url = subscription.url
        eventTypes = subscription.eventTypes
        personalData = subscription.includesPersonalData
        paused = subscription.isPaused
        checkpoint = subscription.checkpoint
        behind = head.map(subscription.behind(head:))
        delivered = subscription.deliveredCount
        failures = subscription.failures
        lastError = subscription.lastError
        lastFailure = subscription.lastFailureAt.map(JSONCoding.timestamp)
        failingPosition = subscription.failingPosition
        retryAt = subscription.retryAt.map(JSONCoding.timestamp)
        createdBy = subscription.createdBy
        createdAt = JSONCoding.timestamp(subscription.createdAt)
    }
}

struct WebhooksBody: Encodable {
    struct Runner: Encodable {
        let node: String
        let since: String
    }

    let subscriptions: [WebhookBody]
    let head: UInt64
    let runner: Runner?
}

struct AddedWebhookBody: Encodable {
    let subscription: WebhookBody
    let secret: String
}
