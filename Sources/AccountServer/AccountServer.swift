//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import HummingbirdAuth
import HummingbirdCore
import IdentityTokens
import Logging
import NIOCore
import Projections
import ServiceLifecycle
import SpeziAccountStore

/// How an ``AccountServer`` listens and what it accepts.
public struct AccountServerConfiguration: Sendable {
    /// The address to bind (loopback unless told otherwise).
    public var host = "127.0.0.1"
    /// The port; 0 picks a free one (``AccountServer/run(onListening:)`` reports it).
    public var port = 8080
    /// How long a session lasts after it starts.
    public var sessionValidity: Duration = .seconds(24 * 3_600)
    /// The issuer a TOTP enrolment names in its `otpauth://` URI: what authenticator apps show
    /// beside the account (the app's or service's name).
    public var totpIssuer = "SpeziAccountStore"
    /// The largest request body accepted; larger ones are answered 413 before they are parsed.
    public var maxBodyBytes = 64 * 1024
    /// How often an idle event stream sends a comment line (and checks its session again).
    public var heartbeat: Duration = .seconds(15)
    /// Limits on logins, signups and password resets (429 with Retry-After beyond them).
    public var rateLimits = RateLimits()
    /// Whether a signup (or the upgrade of an anonymous account) waits for its confirmation by the
    /// owner of the user id: answered `202` whether or not the user id has an account, so that
    /// signups cannot be used to find out which user ids exist, and completed by
    /// `POST /v1/accounts/confirm` with the token the owner received. The store needs
    /// `AccountStoreOptions.signupConfirmationDelivery`. Off by default: a signup is answered
    /// `201` with a session, or `409` for a taken user id.
    public var confirmsSignups = false
    /// The administrator of the audit console's API under `/admin/api/`; nil (the default): no
    /// console, its routes answer 404 `admin-console-off`.
    public var admin: AdminCredential?
    /// How long an admin session lasts before the credential must be presented again.
    public var adminSessionValidity: Duration = .seconds(30 * 60)
    /// How long a projection may be behind the log without advancing before `/health/ready` calls
    /// the node not ready.
    public var stallThreshold: Duration = .seconds(5)
    /// Timeouts and caps on connections and event streams.
    public var connections = ConnectionLimits()
    /// Proxies whose ``forwardedHeader`` names the client (for the limits); empty (the default):
    /// the socket's peer is the client, and forwarding headers are ignored.
    public var trustedProxies: [AddressBlock] = []
    /// The one header the trusted proxies set to name the client (`X-Forwarded-For` by default; or
    /// `Forwarded`, `X-Real-IP`): the client is its right-most address that is not a trusted
    /// proxy. Every other forwarding header is ignored, so a client cannot pick its own address
    /// by sending one that the proxy passes through.
    public var forwardedHeader = ForwardedHeader.xForwardedFor
    /// Whether the admin session cookie is marked `Secure` (sent over HTTPS only): set it when
    /// the console is reached through HTTPS (a TLS proxy). Off by default, for plain-HTTP loopback.
    public var secureCookies = false
    /// `GET /metrics` for a scraper with its bearer token (see <doc:Metrics>); nil (the default):
    /// no such route.
    public var metrics: MetricsEndpoint?
    /// The OpenID Connect providers whose identity tokens sign in (`POST /v1/sessions/identity`)
    /// and link to accounts (`POST /v1/account/identities`): Sign in with Apple, Google, an
    /// organization's own. None by default: those routes answer 404 `unknown-identity-provider`.
    public var identityProviders: [IdentityProviderConfiguration] = []
    /// The bounds on verifying identity tokens: key-set fetches, their timeout and size, clock skew.
    public var identityTokenLimits = IdentityTokenLimits()
    /// How often the server looks for provider tokens owed a revocation (of the providers with
    /// `IdentityProviderConfiguration.tokenEndpoints`), and the first wait after a failed one.
    public var providerTokenRevocationInterval: Duration = .seconds(5)
    /// The longest wait between two tries of one failing revocation.
    public var providerTokenRevocationMaximumBackoff: Duration = .seconds(600)
    /// Whether each request opens a server span (Hummingbird's `TracingMiddleware`), the parent of
    /// the store's spans, for the tracer the process bootstrapped (see <doc:RequestIds>); a server
    /// made with it also turns the store's spans on (`StoreTracing`). Off by default;
    /// `accountctl serve --otel-endpoint` turns it on.
    public var tracesRequests = false
    /// How webhook subscriptions are delivered (see <doc:Webhooks>): on by default; nothing is sent
    /// until an administrator adds a subscription.
    public var webhooks = WebhookSettings()

    /// The defaults: 127.0.0.1:8080, sessions of 24 hours, bodies of at most 64 KiB, a heartbeat every 15 s.
    public init() {}
}

/// An HTTP server over an `AccountStore`: signup, login, sessions, the account's details, changes,
/// deletion, password resets and the account's own history, as JSON (the API is described by the
/// OpenAPI document it serves at `/openapi.yaml`). Errors are RFC 9457 problem details.
///
/// It is a swift-service-lifecycle `Service`: run it in a `ServiceGroup` and it stops taking
/// requests on graceful shutdown (SIGTERM), finishing those under way. The store stays open; its
/// owner closes it afterwards.
public struct AccountServer: Service {
    let routes: AccountRoutes
    let configuration: AccountServerConfiguration
    let logger: Logger

    /// A server for `store`.
    ///
    /// - Parameters:
    ///   - store: The open store the server answers from; its owner closes it after the server stops.
    ///   - configuration: The address, limits, sessions and admin console; the defaults by default.
    ///   - logger: Where access and error lines go; nil logs under `spezi.account-server`.
    public init(store: AccountStore, configuration: AccountServerConfiguration = AccountServerConfiguration(), logger: Logger? = nil) {
        let logger = logger ?? Logger(label: "spezi.account-server")
        // The store's spans are off until a server that traces requests turns them on.
        if configuration.tracesRequests { StoreTracing.isEnabled = true }
        self.routes = AccountRoutes(store: store, configuration: configuration, logger: logger)
        self.configuration = configuration
        self.logger = logger
    }

    /// Serves until graceful shutdown.
    ///
    /// - Throws: ``ServerResourceError`` before it binds, when a file it serves is missing from its
    ///   resource bundle, or the HTTP server's error when the socket cannot be bound or the server
    ///   fails.
    public func run() async throws {
        try await run(onListening: { _ in })
    }

    /// Serves until graceful shutdown; `onListening` gets the port once the socket is bound.
    ///
    /// - Parameter onListening: Called with the bound port (useful when the configuration asks for
    ///   port 0).
    /// - Throws: ``ServerResourceError`` before it binds, when a file it serves (the OpenAPI
    ///   document, the console's page) is missing from its resource bundle.
    public func run(onListening: @escaping @Sendable (Int) async -> Void) async throws {
        let app = try makeApplication(onListening: onListening)
        try await app.run()
    }

    /// The Hummingbird application (package access: the tests drive it without a socket).
    ///
    /// - Throws: ``ServerResourceError`` when a file it serves is missing from its resource bundle.
    package func makeApplication(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let resources = try ServerResources.bundled.get()
        let router = Router(context: ServerRequestContext.self)
        // Outermost: the request's id, in `context.logger` and the answer; then one access-log
        // line for every request, with the answer the others gave.
        router.add(middleware: RequestIdentityMiddleware<ServerRequestContext>(trustedProxies: configuration.trustedProxies))
        router.add(middleware: AccessLogMiddleware<ServerRequestContext>())
        // A server span per request, named by its route's pattern, the parent of the store's
        // spans (command, append, projection wait), when traces are wanted: the middleware reads
        // every request's headers even for a tracer that records nothing.
        if configuration.tracesRequests { router.add(middleware: TracingMiddleware<ServerRequestContext>()) }
        // Before every route: the headers of every answer (404s included).
        router.add(middleware: SecurityHeadersMiddleware<ServerRequestContext>())
        // What no route answers: 405 with Allow for a known path, else 404, as problem details.
        router.add(middleware: RouteFallbackMiddleware<ServerRequestContext>(routes: Self.routePatterns))
        // Requests by route, method and status, and their durations (Hummingbird's metrics, fed to
        // whatever metrics backend the process bootstrapped): only HTTP's own methods reach it.
        router.add(middleware: KnownMethodsMiddleware<ServerRequestContext>())
        router.add(middleware: MetricsMiddleware<ServerRequestContext>())
        // Then who the client is, for every limit (trusted proxies, IPv6 /64), and innermost
        // problem details for what a route throws; then the routes.
        let resolver = ClientAddressResolver(trustedProxies: configuration.trustedProxies, header: configuration.forwardedHeader)
        addAPI(to: router, resolver: resolver)
        if let metrics = configuration.metrics {
            MetricsRoute(endpoint: metrics, attempts: configuration.rateLimits.adminAttemptsPerClient).register(on: router)
        }
        if let admin = configuration.admin {
            let store = routes.store
            let sessions = AdminSessions(
                credential: admin, validity: configuration.adminSessionValidity, secureCookies: configuration.secureCookies,
                deviceKey: { try await store.derivedKey(purpose: "admin-device-cookie v1") })
            let attempts = AdminAttempts(
                limiter: RateLimiter(name: "admin"), perClient: configuration.rateLimits.adminAttemptsPerClient,
                overall: configuration.rateLimits.adminAttemptsOverall, sessions: sessions)
            AdminRoutes(
                store: store, sessions: sessions, console: AdminConsole(resources), attempts: attempts, heartbeat: configuration.heartbeat,
                logger: logger
            ).register(on: router)
        } else {
            AdminRoutes.registerConsoleOff(on: router)
        }
        let limits = configuration.connections
        let counts = ConnectionCounts(limit: limits.maxConnectionsPerClient)
        let capLogger = logger
        var http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionCapHandler(counts: counts, resolver: resolver, logger: capLogger)],
            idleTimeout: TimeAmount(limits.idleTimeout))
        http1.httpDecoder = .init(maxHeaderFieldCount: 100)
        return Application(
            router: router,
            server: .http1(configuration: http1),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: nil,
                availableConnectionsDelegate: .maximum(limits.effectiveMaxConnections, logger: logger)),
            services: backgroundServices,
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// The webhook deliveries (unless turned off), and the provider token revoker when a provider
    /// has token endpoints.
    private var backgroundServices: [any Service] {
        var services: [any Service] = []
        if configuration.webhooks.isEnabled {
            services.append(
                WebhookDeliveryService(
                    store: routes.store, settings: configuration.webhooks,
                    node: configuration.webhooks.node ?? "\(ProcessInfo.processInfo.hostName):\(configuration.port)", logger: logger))
        }
        return services + revocationServices
    }

    /// The provider token revoker, when a provider has token endpoints.
    private var revocationServices: [any Service] {
        guard !routes.providerTokens.isEmpty else { return [] }
        let byIssuer = Dictionary(
            routes.providerTokens.values.map { ($0.issuer, $0) }, uniquingKeysWith: { first, _ in first })
        return [
            ProviderTokenRevoker(
                store: routes.store, clients: byIssuer, interval: configuration.providerTokenRevocationInterval,
                maximumBackoff: configuration.providerTokenRevocationMaximumBackoff, logger: logger)
        ]
    }

    /// How many buckets the API's rate limiter keeps, and the bytes they hold (for tests and the
    /// threat model's memory bounds).
    package var limiterUse: (keys: Int, bytes: Int) { (routes.limiter.count, routes.limiter.approximateBytes) }

    /// The receipt a `202 accepted` answer for `position` carries (for tests).
    package func positionReceipt(for position: UInt64) async throws -> String {
        try await routes.receipts.receipt(for: position)
    }

    /// The methods and paths the server answers (those under `/admin/` when it has an admin
    /// credential), as the OpenAPI document lists them (`/{id}` style).
    public static var operations: [(method: String, path: String)] {
        routePatterns.map { ($0.method.rawValue, $0.openAPIPath) }
    }

    /// Every route of both tables, the API's and the console's, in the order they are registered.
    static let routePatterns: [RoutePattern] = AccountRoutes.operationTable.map(\.pattern) + AdminRoutes.table.map(\.pattern)
}

/// The request context: Hummingbird's, plus the client (for the rate limits) and the signed-in
/// session (set by ``AccountSessionAuthenticator`` on the routes that need one).
struct ServerRequestContext: AccountRequestContext {
    var coreContext: CoreRequestContextStorage
    /// The socket's peer address; nil for a test channel.
    let peer: String?
    /// Who the limits count the request for: the peer, or the client a trusted proxy forwarded
    /// for, IPv6 grouped by /64 (set by ``ClientAddressMiddleware``); "unknown" without a socket.
    var client: String
    /// The session a bearer token signs in; nil before the authenticator ran or when it found none.
    var identity: SignedInAccount?

    init(source: ApplicationRequestContextSource) {
        self.coreContext = CoreRequestContextStorage(source: source)
        self.peer = source.channel.remoteAddress?.ipAddress
        self.client = peer.map(ClientAddressResolver.group) ?? "unknown"
    }
}
