//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import IdentityTokens
import Logging
import SpeziAccount
import SpeziAccountStore

/// The API's operations over the store: one table, used both to register the routes and to check
/// the OpenAPI document against them.
struct AccountRoutes: Sendable {
    let store: AccountStore
    let configuration: AccountServerConfiguration
    /// The server's logger; in the copy a route's handler gets, the request's `context.logger`.
    var logger: Logger
    /// The request's id (``RequestIdentity``) in the copy a route's handler gets; nil otherwise.
    var requestID: String?
    let limiter = RateLimiter()
    let streams: StreamSlots
    let devices: DeviceCookies
    let receipts: PositionReceipts
    let identityTokens: IdentityTokenVerifier
    /// The token endpoints of the providers that have them, by provider id.
    let providerTokens: [String: ProviderTokenClient]

    init(store: AccountStore, configuration: AccountServerConfiguration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.devices = DeviceCookies(store: store, secure: configuration.secureCookies)
        self.receipts = PositionReceipts(store: store)
        self.identityTokens = IdentityTokenVerifier(
            providers: configuration.identityProviders, limits: configuration.identityTokenLimits, logger: logger)
        self.providerTokens = Dictionary(
            uniqueKeysWithValues: configuration.identityProviders.compactMap { provider in
                provider.tokenEndpoints.map {
                    (
                        provider.id,
                        ProviderTokenClient(endpoints: $0, issuer: provider.issuer, timeout: configuration.identityTokenLimits.fetchTimeout)
                    )
                }
            })
        self.streams = StreamSlots(
            sessionLimit: configuration.connections.streamsPerSession, accountLimit: configuration.connections.streamsPerAccount)
    }

    /// One operation of the API: its method, its path, the per-client limits it counts against
    /// (checked by ``ClientRateLimitMiddleware`` before the handler runs), whether
    /// ``AccountSessionAuthenticator`` runs first (the context's `identity`), and what answers it.
    typealias Operation = Route<AccountRoutes, RouteContext>

    static let operationTable: [Operation] = [
        Operation(.post, "/v1/accounts", limits: [.signups, .records], access: .open) { routes, request, context in
            try await routes.signup(&request, client: context.client)
        },
        Operation(.post, "/v1/accounts/confirm", limits: [.signups, .records], access: .open) { routes, request, context in
            try await routes.confirmSignup(&request, client: context.client)
        },
        Operation(.post, "/v1/accounts/anonymous", limits: [.signups, .records], access: .open) { routes, request, context in
            try await routes.signInAnonymously(&request, client: context.client)
        },
        Operation(.post, "/v1/sessions", limits: [.logins, .records], access: .open) { routes, request, context in
            try await routes.login(&request, client: context.client)
        },
        Operation(.post, "/v1/sessions/identity", limits: [.logins, .records], access: .open) { routes, request, context in
            try await routes.identitySignIn(&request, client: context.client)
        },
        Operation(.delete, "/v1/sessions/current", access: .open) { routes, request, _ in try await routes.logout(&request) },
        Operation(.get, "/v1/account", access: .session) { routes, request, context in try routes.details(try context.session(request)) },
        Operation(.patch, "/v1/account", access: .session) { routes, request, context in try await routes.modify(&request, context) },
        Operation(.delete, "/v1/account", access: .session) { routes, request, context in try await routes.delete(&request, context) },
        Operation(.post, "/v1/account/upgrade", limits: [.signups], access: .session) { routes, request, context in
            try await routes.upgrade(&request, try context.session(request), client: context.client)
        },
        Operation(.post, "/v1/account/identities", limits: [.logins], access: .session) { routes, request, context in
            try await routes.linkIdentity(&request, try context.session(request), client: context.client)
        },
        Operation(.delete, "/v1/account/identities/:provider", access: .session) { routes, request, context in
            try await routes.unlinkIdentity(request, try context.session(request))
        },
        Operation(.get, "/v1/account/history", access: .session) { routes, request, context in
            try await routes.history(request, try context.session(request))
        },
        Operation(.post, "/v1/account/totp", access: .session) { routes, request, context in
            try await routes.enrolTOTP(&request, try context.session(request), client: context.client)
        },
        Operation(.post, "/v1/account/totp/confirm", access: .session) { routes, request, context in
            try await routes.confirmTOTP(&request, try context.session(request))
        },
        Operation(.delete, "/v1/account/totp", access: .session) { routes, request, context in
            try await routes.removeTOTP(&request, try context.session(request), client: context.client)
        },
        Operation(.get, "/v1/account/sessions", access: .session) { routes, request, context in
            try await routes.listSessions(try context.session(request))
        },
        Operation(.delete, "/v1/account/sessions/:id", access: .session) { routes, request, context in
            try await routes.endListedSession(request, try context.session(request))
        },
        // Not behind the authenticator: it reads the log's head before it checks the token.
        Operation(.get, "/v1/account/events", access: .open) { routes, request, _ in try await routes.events(&request) },
        Operation(.post, "/v1/password-resets", limits: [.resets, .records], access: .open) { routes, request, _ in
            try await routes.requestReset(&request)
        },
        Operation(.post, "/v1/password-resets/complete", limits: [.resets], access: .open) { routes, request, _ in
            try await routes.completeReset(&request)
        },
        Operation(.get, "/v1/positions/:position", access: .session) { routes, request, context in
            try await routes.position(request, signedIn: context.identity != nil)
        },
        Operation(.get, "/openapi.yaml", access: .open) { routes, _, _ in try routes.openAPIDocument() },
        Operation(.get, "/health", access: .open) { _, _, _ in try AccountRoutes.json(["status": "ok"]) },
        Operation(.get, "/health/ready", access: .open) { routes, _, _ in try await routes.readiness() }
    ]

    /// The API's routes, each behind the per-client limits it counts against. What a route
    /// throws is answered by ``ProblemMiddleware``.
    func collection<Context: AccountRequestContext>(context: Context.Type = Context.self) -> RouteCollection<Context> {
        let collection = RouteCollection(context: Context.self)
        for operation in Self.operationTable {
            // JSON bodies only, before any limit is counted (the console's routes have a guard of their own).
            let group = collection.group().add(middleware: JSONBodyMiddleware<Context>())
            for kind in operation.limits {
                group.add(
                    middleware: ClientRateLimitMiddleware<Context>(kind: kind, limits: configuration.rateLimits, limiter: limiter))
            }
            if operation.access == .session { group.add(middleware: AccountSessionAuthenticator<Context>(store: store)) }
            group.on(RouterPath(operation.path), method: operation.method) { request, context in
                var request = request
                // The handler logs with the request's logger, and its events carry the request's id.
                var routes = self
                routes.logger = context.logger
                routes.requestID = context.requestID
                return try await operation.answer(routes, &request, RouteContext(context))
            }
        }
        return collection
    }

    // MARK: Operations

    private func signup(_ request: inout Request, client: String) async throws -> Response {
        let details = try await body(&request, as: AccountDetails.self)
        try refuseUnknownKeys(details)
        // Checked in either mode (a malformed key is 400 whether or not signups are confirmed).
        let key = try await idempotencyKey(&request, route: "signup")
        if configuration.confirmsSignups {
            if let userId = details[AccountDetails.__Key_userId.self] {
                try limit("signup-userid", try boundedUserKey(userId), configuration.rateLimits.signupsPerUserId)
            }
            try await store.requestSignup(details, context: context(request, client: client))
            return try Self.json(ConfirmationSentBody(), status: .accepted)
        }
        let created = try await spendingKey(key) { try await store.signup(details, context: context(request, client: client, idempotencyKey: key)) }
        let session = try await session(forCreated: created.accountId, request, client: client, idempotencyKey: key)
        var response = try Self.json(SessionBody(session, details: created), status: .created)
        // The client that created the account is its owner's first known device.
        if let userId = details[AccountDetails.__Key_userId.self] {
            let path =
                request.uri.path.hasSuffix("/v1/accounts") ? String(request.uri.path.dropLast("/accounts".count)) + "/sessions" : "/v1/sessions"
            response.headers.append(HTTPField(name: .setCookie, value: try await devices.setCookie(for: userId, device: nil, path: path)))
        }
        return response
    }

    private func confirmSignup(_ request: inout Request, client: String) async throws -> Response {
        guard configuration.confirmsSignups else { throw Problem.signupConfirmationOff }
        let confirmation = try await body(&request, as: SignupConfirmationBody.self)
        let created = try await store.confirmSignup(token: confirmation.token, context: context(request))
        let session = try await store.startSession(
            for: created.accountId, validity: configuration.sessionValidity, context: context(request))
        return try Self.json(SessionBody(session, details: created), status: .created)
    }

    /// An anonymous sign-in hands out a session for nothing but the request: a replay of its
    /// `Idempotency-Key` would hand the same session to whoever learned the key. So a key only
    /// keeps a retry from creating a second account; a replay whose first attempt committed is
    /// refused (409 `idempotency-key-used`) and issues nothing.
    private func signInAnonymously(_ request: inout Request, client: String) async throws -> Response {
        let key = try await idempotencyKey(&request, route: "anonymous")
        let (created, replayed) = try await spendingKey(key) { try await store.anonymousSignup(context: context(request, idempotencyKey: key)) }
        if replayed { throw Problem.idempotencyKeyUsed }
        let session = try await store.startSession(
            for: created.accountId, validity: configuration.sessionValidity, context: context(request))
        return try Self.json(SessionBody(session, details: created), status: .created)
    }

    /// A login. A client that proves an earlier sign-in to this user id with its device cookie
    /// (``DeviceCookies``) is counted apart from everyone else, here and in the store's throttle;
    /// every successful login renews (or sets) that cookie.
    private func login(_ request: inout Request, client: String) async throws -> Response {
        let login = try await body(&request, as: LoginBody.self)
        guard let userKey = store.boundedUserKey(login.userId) else { throw AccountServiceError.wrongCredentials }
        let device = try await devices.device(in: request, userId: login.userId)
        try limit("login-account", "\(userKey)|\(device.map { "device:\($0)" } ?? client)", configuration.rateLimits.loginsPerAccount)
        let (details, session) = try await store.startSession(
            userId: login.userId, password: login.password, secondFactor: login.totp, validity: configuration.sessionValidity,
            context: context(request, client: client, device: device))
        var response = try Self.json(SessionBody(session, details: details), status: .created)
        response.headers.append(
            HTTPField(name: .setCookie, value: try await devices.setCookie(for: login.userId, device: device, path: request.uri.path)))
        return response
    }

    private func logout(_ request: inout Request) async throws -> Response {
        try await store.endSession(token: try request.bearerToken(), context: context(request))
        return Response(status: .noContent)
    }

    /// The account's JSON, encoded once for each version of its state (the store keeps it beside
    /// the state): most requests read an account that has not changed since the last one.
    private func details(_ session: SignedInAccount) throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: try accountJSON(session.state)))
    }

    /// `AccountBody`'s JSON of `state`, made once for each version of it.
    private func accountJSON(_ state: AccountState) throws -> ByteBuffer {
        try store.rendering(of: state, as: "AccountServer.AccountBody") { details in
            ByteBuffer(bytes: try JSONCoding.encoder.encode(AccountBody(details)))
        }
    }

    private func modify(_ request: inout Request, _ requestContext: RouteContext) async throws -> Response {
        let token = try request.bearerToken()
        let client = requestContext.client
        let key = try await idempotencyKey(&request, route: "modify", token: token)
        let state: AccountState
        if let session = requestContext.identity {
            state = session.state
        } else {
            // A retry whose first attempt changed the password (which ended this session).
            guard try await optionalBody(&request, as: ModifyBody.self)?.set?.password != nil,
                let accountId = try await committedRetry(.modify, token: token, context: context(request, idempotencyKey: key))
            else {
                throw AccountStoreError.invalidSession
            }
            guard let details = try store.details(of: accountId) else { throw AccountStoreError.invalidSession }
            let session = try await store.startSession(
                for: accountId, validity: configuration.sessionValidity, context: context(request, idempotencyKey: key))
            return try Self.json(ModifiedBody(account: AccountBody(details), session: SessionBody(session, details: details)))
        }
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
        if changesCredentials {
            try await reauthenticate(state, password: change.currentPassword, secondFactor: change.totp, request: request, client: client)
        }
        let modifications = try AccountModifications(modifiedDetails: set, removedAccountDetails: removedDetails(removed, from: state))
        let after = try await store.modifiedState(
            state.accountId, modifications, context: context(request, actor: state.accountId, idempotencyKey: key))
        if set.password != nil {
            // The password change ended every session, this one too: hand out a new one.
            let details = try store.details(from: after)
            let new = try await store.startSession(
                for: state.accountId, validity: configuration.sessionValidity, context: context(request, idempotencyKey: key))
            return try Self.json(ModifiedBody(account: AccountBody(details), session: SessionBody(new, details: details)))
        }
        // `ModifiedBody` without a session, around the rendering that the next reads answer too.
        let account = try accountJSON(after)
        var body = ByteBuffer()
        body.reserveCapacity(account.readableBytes + 12)
        body.writeString(#"{"account":"#)
        body.writeImmutableBuffer(account)
        body.writeString("}")
        return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: body))
    }

    private func delete(_ request: inout Request, _ requestContext: RouteContext) async throws -> Response {
        let token = try request.bearerToken()
        let client = requestContext.client
        let key = try await idempotencyKey(&request, route: "delete", token: token)
        let state: AccountState
        if let session = requestContext.identity {
            state = session.state
        } else {
            // A retry of a deletion that committed.
            guard try await committedRetry(.delete, token: token, context: context(request, idempotencyKey: key)) != nil else {
                throw AccountStoreError.invalidSession
            }
            return Response(status: .noContent)
        }
        let body = try await optionalBody(&request, as: DeleteBody.self)
        if !state.isAnonymous {
            try await reauthenticate(state, password: body?.currentPassword, secondFactor: body?.totp, request: request, client: client)
        }
        try await store.delete(state.accountId, context: context(request, actor: state.accountId, idempotencyKey: key))
        return Response(status: .noContent)
    }

    private func upgrade(_ request: inout Request, _ session: SignedInAccount, client: String) async throws -> Response {
        let state = session.state
        let details = try await body(&request, as: AccountDetails.self)
        try refuseUnknownKeys(details)
        if configuration.confirmsSignups {
            if let userId = details[AccountDetails.__Key_userId.self] {
                try limit("signup-userid", try boundedUserKey(userId), configuration.rateLimits.signupsPerUserId)
            }
            try await store.requestUpgrade(state.accountId, with: details, context: context(request, actor: state.accountId, client: client))
            return try Self.json(ConfirmationSentBody(), status: .accepted)
        }
        let upgraded = try await store.upgrade(state.accountId, with: details, context: context(request, actor: state.accountId, client: client))
        return try Self.json(AccountBody(upgraded))
    }

    /// One page of the account's history (`limit`, 1 to 500, default 100; `cursor`, the `next` of
    /// the page before). Each page folds the stream up to it, so pages are limited per account.
    private func history(_ request: Request, _ session: SignedInAccount) async throws -> Response {
        let state = session.state
        let (after, limit) = try Self.page(request)
        try self.limit("history-account", state.accountId, configuration.rateLimits.historyPagesPerAccount)
        let page = try await store.history(of: state.accountId, after: after, limit: limit)
        return try Self.json(HistoryBody(accountId: state.accountId, page: page))
    }

    /// The `cursor` and `limit` query parameters of a paged route.
    static func page(_ request: Request) throws -> (after: UInt64, limit: Int) {
        let parameters = request.uri.queryParameters
        let after: UInt64 =
            try parameters.get("cursor").map { (text: String) throws -> UInt64 in
                guard let value = UInt64(text), value <= UInt64(Int64.max) else { throw Problem.malformed("cursor must be the next of a page") }
                return value
            } ?? 0
        let limit =
            try parameters.get("limit").map { (text: String) throws -> Int in
                guard let value = Int(text), (1...AccountStore.maxHistoryPage).contains(value) else {
                    throw Problem.malformed("limit must be 1 to \(AccountStore.maxHistoryPage)")
                }
                return value
            } ?? 100
        return (after, limit)
    }

    private func events(_ request: inout Request) async throws -> Response {
        let token = try request.bearerToken()
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
        guard let slot = streams.take(session: sessionHash, account: state.accountId) else {
            logger.notice("event stream refused: too many open", metadata: ["account": "\(state.accountId)"])
            throw Problem(
                "too-many-streams", .tooManyRequests, "Too many event streams are open for this session or account: close one first.",
                retryAfter: 5)
        }
        return NotificationStream(
            store: store, token: token, sessionHash: sessionHash, accountId: state.accountId, start: start,
            expiresAt: Date(timeIntervalSince1970: Double(expiry) / 1_000_000), heartbeat: configuration.heartbeat, logger: logger
        ).response(holding: slot)
    }

    private func requestReset(_ request: inout Request) async throws -> Response {
        let reset = try await body(&request, as: ResetRequestBody.self)
        // The same answer, at once, whether or not the user id has an account, and whether or not
        // a new link goes out: past the user id's limit none does, and the links sent before stay
        // valid (a stranger's requests cannot void the owner's link or use up the owner's requests).
        if let userKey = store.boundedUserKey(reset.userId),
            limiter.take("reset-account:\(userKey)", limit: configuration.rateLimits.resetsPerAccount) != nil
        {
            logger.notice("password reset request dropped: the user id's limit is reached")
        } else {
            store.startPasswordResetRequest(userId: reset.userId, context: context(request))
        }
        return Response(status: .accepted)
    }

    /// A reset completion. The token is checked before any allowance of the user id is spent, and
    /// only a failed one counts: strangers' wrong tokens can use up the user id's allowance for
    /// wrong tokens, never the owner's valid link.
    private func completeReset(_ request: inout Request) async throws -> Response {
        let reset = try await body(&request, as: ResetCompletionBody.self)
        let bucket = store.boundedUserKey(reset.userId).map { "reset-complete-account:\($0)" }
        do {
            try await store.completePasswordReset(
                userId: reset.userId, token: reset.token, newPassword: reset.newPassword, context: context(request))
        } catch AccountStoreError.invalidPasswordResetToken {
            if let bucket, let wait = limiter.take(bucket, limit: configuration.rateLimits.resetCompletionsPerAccount) {
                logger.notice("rate limited", metadata: ["limit": "reset-complete-account"])
                throw Problem.rateLimited(retryAfter: wait)
            }
            throw AccountStoreError.invalidPasswordResetToken
        }
        return Response(status: .noContent)
    }

    // MARK: Helpers

    /// The normalized user id for a limit's key; 422 `invalid-details` for one longer than the store
    /// takes (checked on the raw bytes, before any normalization).
    private func boundedUserKey(_ userId: String) throws -> String {
        guard let key = store.boundedUserKey(userId) else {
            throw Problem(
                "invalid-details", .unprocessableContent, "The account details break the service's rules.",
                detail: "the user id has more than \(store.limits.maxUserIdBytes) bytes")
        }
        return key
    }

    /// Takes one request from the bucket of `key` under `kind`, or answers 429 with Retry-After.
    func limit(_ kind: String, _ key: String, _ limit: RateLimit) throws {
        guard let wait = limiter.take("\(kind):\(key)", limit: limit) else { return }
        logger.notice("rate limited", metadata: ["limit": "\(kind)"])
        throw Problem.rateLimited(retryAfter: wait)
    }

    /// Checks the current password (and, for an account with a second factor, a code) before a
    /// change of credentials, a deletion or a TOTP enrolment: limited per account, and counted by
    /// the store's login throttle like a login (a failure counts towards the client's lockout).
    func reauthenticate(_ state: AccountState, password: String?, secondFactor: String? = nil, request: Request, client: String) async throws {
        guard let password, !state.userId.isEmpty else { throw Problem.reauthenticationRequired }
        try limit("step-up-account", state.accountId, configuration.rateLimits.stepUpsPerAccount)
        let details = try await store.login(
            userId: state.userId, password: password, secondFactor: secondFactor, context: context(request, actor: state.accountId, client: client))
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

    func body<T: Decodable>(_ request: inout Request, as type: T.Type) async throws -> T {
        let buffer = try await collect(&request)
        guard buffer.readableBytes > 0 else { throw Problem.malformed("the body is empty; this operation takes a JSON object") }
        return try JSONCoding.decoder(registry: store.registry).decode(T.self, from: Data(buffer.readableBytesView))
    }

    func optionalBody<T: Decodable>(_ request: inout Request, as type: T.Type) async throws -> T? {
        let buffer = try await collect(&request)
        guard buffer.readableBytes > 0 else { return nil }
        return try JSONCoding.decoder(registry: store.registry).decode(T.self, from: Data(buffer.readableBytesView))
    }

    /// The body, up to `maxBodyBytes`, if it arrives within the body timeout (else 408).
    func collect(_ request: inout Request) async throws -> ByteBuffer {
        let body = request.body
        let limit = configuration.maxBodyBytes
        let timeout = configuration.connections.bodyTimeout
        let buffer = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: limit) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let buffer = first else {
                throw Problem("body-timeout", .requestTimeout, "The request body did not arrive in time.")
            }
            return buffer
        }
        request.body = .init(buffer: buffer)
        return buffer
    }

    /// The client's `X-Request-ID`, if it sent one, else the request's own id
    /// (``RequestIdentity``), goes into the events it appends as their correlation id; the client
    /// is what the store's login throttle counts under, and, with the request's `User-Agent`,
    /// where a session the command opens comes from (``SessionClient``).
    func context(
        _ request: Request, actor: String? = nil, client: String? = nil, idempotencyKey: String? = nil, device: String? = nil
    ) -> AccountStore.Context {
        var context = AccountStore.Context(
            actor: actor.map { "account:\($0)" } ?? "http",
            correlationID: request.headers[RequestIdentity.header].map { String($0.prefix(128)) } ?? requestID,
            client: client, idempotencyKey: idempotencyKey, device: device)
        context.sessionClient = client.map { SessionClient(address: $0, userAgent: request.headers[.userAgent] ?? "") }
        return context
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try JSONCoding.encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The document from the resource bundle (checked when the server started).
    private func openAPIDocument() throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/yaml"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: try ServerResources.bundled.get().openAPIDocument)))
    }
}
