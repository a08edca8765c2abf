//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import Logging
import SpeziAccount
import SpeziAccountStore

/// The API's operations over the store: one table, used both to register the routes and to check
/// the OpenAPI document against them.
struct AccountRoutes: Sendable {
    let store: AccountStore
    let configuration: AccountServerConfiguration
    let logger: Logger
    let limiter = RateLimiter()

    /// One operation: its method, its path, and what answers it.
    struct Operation: Sendable {
        let method: HTTPRequest.Method
        let path: String
        /// Gets the routes, the request and the client's address.
        let answer: @Sendable (AccountRoutes, inout Request, String) async throws -> Response
    }

    static let operationTable: [Operation] = [
        Operation(method: .post, path: "/v1/accounts") { routes, request, client in try await routes.signup(&request, client: client) },
        Operation(method: .post, path: "/v1/accounts/confirm") { routes, request, client in try await routes.confirmSignup(&request, client: client)
        },
        Operation(method: .post, path: "/v1/accounts/anonymous") { routes, request, client in
            try await routes.signInAnonymously(&request, client: client)
        },
        Operation(method: .post, path: "/v1/sessions") { routes, request, client in try await routes.login(&request, client: client) },
        Operation(method: .delete, path: "/v1/sessions/current") { routes, request, _ in try await routes.logout(&request) },
        Operation(method: .get, path: "/v1/account") { routes, request, _ in try await routes.details(&request) },
        Operation(method: .patch, path: "/v1/account") { routes, request, _ in try await routes.modify(&request) },
        Operation(method: .delete, path: "/v1/account") { routes, request, _ in try await routes.delete(&request) },
        Operation(method: .post, path: "/v1/account/upgrade") { routes, request, _ in try await routes.upgrade(&request) },
        Operation(method: .get, path: "/v1/account/history") { routes, request, _ in try await routes.history(&request) },
        Operation(method: .get, path: "/v1/account/events") { routes, request, _ in try await routes.events(&request) },
        Operation(method: .post, path: "/v1/password-resets") { routes, request, client in try await routes.requestReset(&request, client: client) },
        Operation(method: .post, path: "/v1/password-resets/complete") { routes, request, client in
            try await routes.completeReset(&request, client: client)
        },
        Operation(method: .get, path: "/openapi.yaml") { routes, _, _ in routes.openAPIDocument() },
        Operation(method: .get, path: "/health") { _, _, _ in try AccountRoutes.json(["status": "ok"]) }
    ]

    func register(on router: Router<ServerRequestContext>) {
        for operation in Self.operationTable {
            router.on(RouterPath(operation.path), method: operation.method) { request, context in
                await answer(operation, request, client: context.client)
            }
        }
    }

    /// Runs an operation: problems become problem details, anything else a logged 500. Every
    /// request leaves one access-log line with its method, route, status and duration (no bodies,
    /// no tokens, no user ids).
    private func answer(_ operation: Operation, _ request: Request, client: String) async -> Response {
        let start = ContinuousClock.now
        var request = request
        let response: Response
        do {
            response = try await operation.answer(self, &request, client)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            // The body passed maxBodyBytes while it was collected.
            response = Problem.bodyTooLarge(configuration.maxBodyBytes).response()
        } catch let error where Problem.isMalformedFraming(error) {
            response = Problem.malformedFraming.response()
        } catch {
            if let problem = Problem.from(error) {
                response = problem.response()
            } else {
                logger.error(
                    "request failed", metadata: ["route": "\(operation.method) \(operation.path)", "error": "\(String(reflecting: error))"])
                response = Problem.internalError.response()
            }
        }
        let elapsed = ContinuousClock.now - start
        logger.info(
            "request",
            metadata: [
                "method": "\(operation.method)", "route": "\(operation.path)", "status": "\(response.status.code)",
                "ms": "\(String(format: "%.2f", Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1_000))"
            ])
        return response
    }

    // MARK: Operations

    private func signup(_ request: inout Request, client: String) async throws -> Response {
        try limit("signup-client", client, configuration.rateLimits.signupsPerClient)
        let details = try await body(&request, as: AccountDetails.self)
        try refuseUnknownKeys(details)
        if configuration.confirmsSignups {
            if let userId = details[AccountDetails.__Key_userId.self] {
                try limit("signup-userid", AccountLog.normalizedUserId(userId), configuration.rateLimits.signupsPerUserId)
            }
            try await store.requestSignup(details, context: context(request))
            return try Self.json(ConfirmationSentBody(), status: .accepted)
        }
        let created = try await store.signup(details, context: context(request))
        let session = try await store.startSession(for: created.accountId, validity: configuration.sessionValidity, context: context(request))
        return try Self.json(SessionBody(session, details: created), status: .created)
    }

    private func confirmSignup(_ request: inout Request, client: String) async throws -> Response {
        try limit("signup-client", client, configuration.rateLimits.signupsPerClient)
        guard configuration.confirmsSignups else { throw Problem.signupConfirmationOff }
        let confirmation = try await body(&request, as: SignupConfirmationBody.self)
        let created = try await store.confirmSignup(token: confirmation.token, context: context(request))
        let session = try await store.startSession(for: created.accountId, validity: configuration.sessionValidity, context: context(request))
        return try Self.json(SessionBody(session, details: created), status: .created)
    }

    private func signInAnonymously(_ request: inout Request, client: String) async throws -> Response {
        try limit("signup-client", client, configuration.rateLimits.signupsPerClient)
        let created = try await store.signInAnonymously(context: context(request))
        let session = try await store.startSession(for: created.accountId, validity: configuration.sessionValidity, context: context(request))
        return try Self.json(SessionBody(session, details: created), status: .created)
    }

    private func login(_ request: inout Request, client: String) async throws -> Response {
        try limit("login-client", client, configuration.rateLimits.loginsPerClient)
        let login = try await body(&request, as: LoginBody.self)
        try limit("login-account", AccountLog.normalizedUserId(login.userId), configuration.rateLimits.loginsPerAccount)
        let (details, session) = try await store.startSession(
            userId: login.userId, password: login.password, validity: configuration.sessionValidity, context: context(request))
        return try Self.json(SessionBody(session, details: details), status: .created)
    }

    private func logout(_ request: inout Request) async throws -> Response {
        try await store.endSession(token: try bearer(request), context: context(request))
        return Response(status: .noContent)
    }

    private func details(_ request: inout Request) async throws -> Response {
        let state = try await store.authenticate(token: try bearer(request))
        return try Self.json(AccountBody(try store.details(from: state)))
    }

    private func modify(_ request: inout Request) async throws -> Response {
        let state = try await store.authenticate(token: try bearer(request))
        let change = try await body(&request, as: ModifyBody.self)
        let set = change.set ?? AccountDetails()
        try refuseUnknownKeys(set)
        let removed = try (change.remove ?? []).map { identifier in
            guard let key = store.registry.key(for: identifier) else {
                throw Problem(
                    "invalid-details", .unprocessableContent, "The account details break the service's rules.", detail: "unknown key \(identifier)")
            }
            return key
        }
        let changesUserId = set[AccountDetails.__Key_userId.self].map { $0 != state.userId } ?? false
        let changesCredentials = set.password != nil || changesUserId
        if changesUserId { try limit("userid-change-account", state.accountId, configuration.rateLimits.userIdChangesPerAccount) }
        if changesCredentials { try await reauthenticate(state, password: change.currentPassword, request: request) }
        let modifications = try AccountModifications(modifiedDetails: set, removedAccountDetails: removedDetails(removed, from: state))
        let details = try await store.modify(state.accountId, modifications, context: context(request, actor: state.accountId))
        var session: SessionBody?
        if set.password != nil {
            // The password change ended every session, this one too: hand out a new one.
            let new = try await store.startSession(for: state.accountId, validity: configuration.sessionValidity, context: context(request))
            session = SessionBody(new, details: details)
        }
        return try Self.json(ModifiedBody(account: AccountBody(details), session: session))
    }

    private func delete(_ request: inout Request) async throws -> Response {
        let state = try await store.authenticate(token: try bearer(request))
        let body = try await optionalBody(&request, as: DeleteBody.self)
        if !state.isAnonymous { try await reauthenticate(state, password: body?.currentPassword, request: request) }
        try await store.delete(state.accountId, context: context(request, actor: state.accountId))
        return Response(status: .noContent)
    }

    private func upgrade(_ request: inout Request) async throws -> Response {
        let state = try await store.authenticate(token: try bearer(request))
        let details = try await body(&request, as: AccountDetails.self)
        try refuseUnknownKeys(details)
        if configuration.confirmsSignups {
            if let userId = details[AccountDetails.__Key_userId.self] {
                try limit("signup-userid", AccountLog.normalizedUserId(userId), configuration.rateLimits.signupsPerUserId)
            }
            try await store.requestUpgrade(state.accountId, with: details, context: context(request, actor: state.accountId))
            return try Self.json(ConfirmationSentBody(), status: .accepted)
        }
        let upgraded = try await store.upgrade(state.accountId, with: details, context: context(request, actor: state.accountId))
        return try Self.json(AccountBody(upgraded))
    }

    private func history(_ request: inout Request) async throws -> Response {
        let state = try await store.authenticate(token: try bearer(request))
        let entries = try await store.history(of: state.accountId)
        return try Self.json(HistoryBody(accountId: state.accountId, entries: entries.map(HistoryEntryBody.init)))
    }

    private func events(_ request: inout Request) async throws -> Response {
        let token = try bearer(request)
        guard let sessionHash = AccountStore.sessionHash(ofToken: token) else { throw AccountStoreError.invalidSession }
        // The head is read before the token is checked: whatever ends this session comes after it,
        // so the stream, which starts at or before the head, reads that record and ends after it.
        let head = try await store.log.lastPosition()
        let state = try await store.authenticate(token: token)
        var start = head
        if let last = request.headers[.init("Last-Event-ID")!] {
            guard let position = UInt64(last) else { throw Problem.malformed("Last-Event-ID is not a log position") }
            start = min(position, head)
        }
        guard let expiry = state.sessions[sessionHash] else { throw AccountStoreError.invalidSession }
        return NotificationStream(
            store: store, token: token, sessionHash: sessionHash, accountId: state.accountId, start: start,
            expiresAt: Date(timeIntervalSince1970: Double(expiry) / 1_000_000), heartbeat: configuration.heartbeat, logger: logger
        ).response()
    }

    private func requestReset(_ request: inout Request, client: String) async throws -> Response {
        try limit("reset-client", client, configuration.rateLimits.resetsPerClient)
        let reset = try await body(&request, as: ResetRequestBody.self)
        try limit("reset-account", AccountLog.normalizedUserId(reset.userId), configuration.rateLimits.resetsPerAccount)
        // The same answer whether or not the user id has an account.
        try await store.requestPasswordReset(userId: reset.userId, context: context(request))
        return Response(status: .accepted)
    }

    private func completeReset(_ request: inout Request, client: String) async throws -> Response {
        try limit("reset-client", client, configuration.rateLimits.resetsPerClient)
        let reset = try await body(&request, as: ResetCompletionBody.self)
        try await store.completePasswordReset(userId: reset.userId, token: reset.token, newPassword: reset.newPassword, context: context(request))
        return Response(status: .noContent)
    }

    // MARK: Helpers

    /// Takes one request from the bucket of `key` under `kind`, or answers 429 with Retry-After.
    private func limit(_ kind: String, _ key: String, _ limit: RateLimit) throws {
        guard let wait = limiter.take("\(kind):\(key)", limit: limit) else { return }
        logger.notice("rate limited", metadata: ["limit": "\(kind)"])
        throw Problem("rate-limited", .tooManyRequests, "Too many requests: wait before trying again.", retryAfter: wait)
    }

    /// Checks the current password before a change of credentials or a deletion (a failure counts
    /// towards the lockout like a failed login).
    private func reauthenticate(_ state: AccountState, password: String?, request: Request) async throws {
        guard let password, !state.userId.isEmpty else { throw Problem.reauthenticationRequired }
        let details = try await store.login(userId: state.userId, password: password, context: context(request, actor: state.accountId))
        guard details.accountId == state.accountId else { throw AccountServiceError.wrongCredentials }
    }

    /// The current values of the keys to remove (`AccountModifications` carries them).
    private func removedDetails(_ keys: [any AccountKey.Type], from state: AccountState) throws -> AccountDetails {
        let current = try store.details(from: state)
        var removed = AccountDetails()
        for key in keys {
            guard let value = current.value(for: key) else { continue }
            _ = removed.setValue(value, for: key)
        }
        return removed
    }

    /// Identifiers the store's registry does not know are refused, not stored as unknown values.
    private func refuseUnknownKeys(_ details: AccountDetails) throws {
        guard details.unknownValues.isEmpty else {
            let keys = details.unknownValues.keys.sorted().joined(separator: ", ")
            throw Problem("invalid-details", .unprocessableContent, "The account details break the service's rules.", detail: "unknown keys: \(keys)")
        }
    }

    private func bearer(_ request: Request) throws -> String {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { throw Problem.unauthenticated }
        return String(header.dropFirst("Bearer ".count))
    }

    private func body<T: Decodable>(_ request: inout Request, as type: T.Type) async throws -> T {
        let buffer = try await request.body.collect(upTo: configuration.maxBodyBytes)
        guard buffer.readableBytes > 0 else { throw Problem.malformed("the body is empty; this operation takes a JSON object") }
        return try JSONCoding.decoder(registry: store.registry).decode(T.self, from: Data(buffer.readableBytesView))
    }

    private func optionalBody<T: Decodable>(_ request: inout Request, as type: T.Type) async throws -> T? {
        let buffer = try await request.body.collect(upTo: configuration.maxBodyBytes)
        guard buffer.readableBytes > 0 else { return nil }
        return try JSONCoding.decoder(registry: store.registry).decode(T.self, from: Data(buffer.readableBytesView))
    }

    /// The request's id (its `X-Request-ID`, if any) goes into the events it appends.
    private func context(_ request: Request, actor: String? = nil) -> AccountStore.Context {
        AccountStore.Context(
            actor: actor.map { "account:\($0)" } ?? "http", correlationID: request.headers[.init("X-Request-ID")!].map { String($0.prefix(128)) })
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try JSONCoding.encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    private func openAPIDocument() -> Response {
        guard !OpenAPIDocument.text.isEmpty else { return Problem.notFound.response() }
        return Response(
            status: .ok, headers: [.contentType: "application/yaml"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: OpenAPIDocument.text)))
    }
}
