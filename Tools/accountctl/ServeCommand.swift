//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import ArgumentParser
import Foundation
import IdentityTokens
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SpeziAccountStore

#if OpenTelemetry
    import OTel
#endif

/// `accountctl serve`: the account server over HTTP on a store, until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the store's accounts over HTTP (JSON; the OpenAPI document is at /openapi.yaml).",
        discussion: """
            Prints "serving on http://HOST:PORT" once the socket is bound (with --port 0, the port \
            the system picked). SIGTERM or SIGINT stops taking connections, finishes the requests \
            under way and closes the store. Password reset tokens are handed to the file given with \
            --reset-outbox (one JSON object per line, created with mode 0600) for a mailer to send; \
            without it they are not delivered. With --signup-outbox, signups wait for their \
            confirmation: every signup is answered 202, and the file gets either a token for \
            POST /v1/accounts/confirm or a notice that the user id has an account already, so \
            signups reveal nothing about which user ids exist. Both options may name one file.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "The address to bind.")
    var host = "127.0.0.1"

    @Option(help: "The port (0: any free one).")
    var port = 8080

    @Option(help: "How long a session lasts, in seconds.")
    var sessionSeconds = 86_400

    @Option(help: "How often an idle event stream gets a comment line and its session is checked again, in seconds.")
    var heartbeatSeconds = 15.0

    @Option(help: "The largest request body accepted, in bytes.")
    var maxBodyBytes = 64 * 1024

    @Option(help: "How long a connection may stay silent (an unfinished request head, keep-alive), in seconds.")
    var idleTimeoutSeconds = 15.0

    @Option(help: "How long a request body may take to arrive, in seconds.")
    var bodyTimeoutSeconds = 15.0

    @Option(help: "Connections open at once (default: the open-files limit, raised to its maximum, less 128).")
    var maxConnections: Int?

    @Option(help: "Connections open at once from one address (an IPv6 /64); trusted proxies are exempt.")
    var maxConnectionsPerClient = 256

    @Option(help: "Password checks allowed to wait for the hashing threads; more are answered 503 (default: 16 per core).")
    var maxQueuedPasswordChecks: Int?

    @Option(help: "Event streams open at once per session.")
    var streamsPerSession = 4

    @Option(help: "Event streams open at once per account.")
    var streamsPerAccount = 16

    @Option(
        name: .customLong("trusted-proxy"),
        help: "A proxy (address or CIDR block) whose --forwarded-header names the client; repeat for several.")
    var trustedProxies: [String] = []

    @Option(
        help: ArgumentHelp(
            "The one header the trusted proxies set to name the client (X-Forwarded-For, Forwarded, X-Real-IP, ...); others are ignored.",
            valueName: "name"))
    var forwardedHeader = "X-Forwarded-For"

    @Option(help: "A file to append password reset tokens to, for delivery (JSON lines).")
    var resetOutbox: String?

    @Option(help: "Confirm signups: a file to append confirmation tokens and already-registered notices to (JSON lines).")
    var signupOutbox: String?

    @Option(help: "Enable the audit console API under /admin/api/: a file whose first line is name:password (12+ characters).")
    var adminCredentialFile: String?

    @Option(
        help:
            "Serve GET /metrics (Prometheus' text format) to a scraper that sends the token in this file's first line (16+ characters) as a bearer token."
    )
    var metricsTokenFile: String?

    @Option(
        name: .customLong("identity-provider"),
        help: ArgumentHelp(
            "An OpenID Connect provider whose identity tokens sign in: id=NAME,issuer=URL,jwks=URL,client-id=ID (client-id repeatable), "
                + "optionally email-user-id=true, nonce=raw|sha256-hex, alg=RS256|ES256 (repeatable); preset=apple or preset=google "
                + "fills issuer, jwks, nonce and alg. To revoke refresh tokens when an account is deleted (Apple requires it): "
                + "team-id=T,key-id=K,private-key=FILE.p8 (or client-secret-file=FILE), token-url=URL,revoke-url=URL (preset=apple fills "
                + "them). Repeat for several providers.",
            valueName: "spec"))
    var identityProviders: [String] = []

    @Option(
        help: ArgumentHelp(
            "Check passwords imported from Firebase (accountctl import --firebase) with this project's hash parameters: "
                + "a JSON file with base64_signer_key, base64_salt_separator, rounds and mem_cost.",
            valueName: "file"))
    var firebaseHashParameters: String?

    @Option(
        help: ArgumentHelp(
            "This server's id among the servers of one log, for the webhook runner's lease (default: host name and port). "
                + "Keep it across restarts: a restarted server then goes on delivering at once.",
            valueName: "id"))
    var nodeId: String?

    @Option(help: "How often the webhook runner looks for new events to deliver, in seconds.")
    var webhookIntervalSeconds = 1.0

    @Option(help: "How long one webhook delivery may take, the receiver's whole answer included, in seconds.")
    var webhookTimeoutSeconds = 10.0

    @Option(help: "How long a server that stopped writing keeps the webhook runner's lease before another server of the log takes over, in seconds.")
    var webhookLeaseSeconds = 30.0

    @Option(
        help: ArgumentHelp(
            "Export traces (a span per request, the store's commands, appends and projection waits) over OTLP/HTTP with JSON "
                + "to this URL, e.g. http://127.0.0.1:4318/v1/traces. Needs accountctl built with `swift build --traits OpenTelemetry`.",
            valueName: "url"))
    var otelEndpoint: String?

    @Option(
        help: ArgumentHelp(
            "A JSON file of settings, keyed by these options' long names (a list for a repeatable one). The command line wins over "
                + "the environment (ACCOUNTCTL_<NAME>, e.g. ACCOUNTCTL_MAX_BODY_BYTES), which wins over the file (also ACCOUNTCTL_CONFIG).",
            valueName: "file"))
    var config: String?

    @Flag(help: "Print the effective settings, each with where it came from (command line, environment, file, default), and exit.")
    var checkConfig = false

    @Flag(help: "Mark the admin session cookie Secure (sent over HTTPS only): for a console reached through a TLS proxy.")
    var secureCookies = false

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard sessionSeconds > 0 else { throw ValidationError("--session-seconds must be positive") }
        guard heartbeatSeconds.isFinite, (0.01...3_600).contains(heartbeatSeconds) else {
            throw ValidationError("--heartbeat-seconds must be between 0.01 and 3600")
        }
        guard maxBodyBytes >= 1_024 else { throw ValidationError("--max-body-bytes must be at least 1024") }
        for (name, value) in [("--idle-timeout-seconds", idleTimeoutSeconds), ("--body-timeout-seconds", bodyTimeoutSeconds)] {
            guard value.isFinite, (0.1...3_600).contains(value) else { throw ValidationError("\(name) must be between 0.1 and 3600") }
        }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be positive") }
        if let maxQueuedPasswordChecks, maxQueuedPasswordChecks < 1 { throw ValidationError("--max-queued-password-checks must be positive") }
        guard maxConnectionsPerClient >= 1, streamsPerSession >= 1, streamsPerAccount >= 1 else {
            throw ValidationError("--max-connections-per-client, --streams-per-session and --streams-per-account must be positive")
        }
        for proxy in trustedProxies where AddressBlock(proxy) == nil {
            throw ValidationError("--trusted-proxy \(proxy) is not an address or a CIDR block")
        }
        guard ForwardedHeader(forwardedHeader) != nil else { throw ValidationError("--forwarded-header \(forwardedHeader) is not a header name") }
        for (name, value) in [
            ("--webhook-interval-seconds", webhookIntervalSeconds), ("--webhook-timeout-seconds", webhookTimeoutSeconds),
            ("--webhook-lease-seconds", webhookLeaseSeconds)
        ] {
            guard value.isFinite, (0.01...600).contains(value) else { throw ValidationError("\(name) must be between 0.01 and 600") }
        }
        if let nodeId, nodeId.isEmpty || nodeId.utf8.count > 200 { throw ValidationError("--node-id must have 1 to 200 bytes") }
        var ids: Set<String> = []
        for spec in identityProviders {
            let provider = try Self.identityProvider(spec)
            guard ids.insert(provider.id).inserted else { throw ValidationError("--identity-provider \(provider.id) is given twice") }
        }
    }

    func run() async throws {
        // The default soft limit (often 1,024) would cap the connections far below what the
        // system allows; the cap keeps a reserve of descriptors below the raised limit.
        ConnectionLimits.raiseOpenFilesLimit()
        try await guarded {
            let outbox = try resetOutbox.map(Outbox.init(path:))
            let signups = try signupOutbox.map(Outbox.init(path:))
            let admin: AdminCredential?
            do {
                admin = try adminCredentialFile.map(AdminCredential.init(contentsOf:))
            } catch {
                throw ToolError.input("--admin-credential-file: \(error)")
            }
            let metrics = try metricsTokenFile.map(Self.metricsEndpoint(tokenFile:))
            let firebase = try firebaseHashParameters.map(Import.firebaseParameters(file:))
            try await global.withStore(
                creating: true,
                adjusting: { options in
                    options.maxQueuedPasswordChecks = maxQueuedPasswordChecks ?? AccountStoreOptions.serverPasswordCheckQueue
                    options.firebaseHashParameters = firebase
                    if let outbox { options.passwordResetDelivery = { request in outbox.deliver(request) } }
                    if let signups { options.signupConfirmationDelivery = { message in signups.deliver(message) } }
                }
            ) { store in
                var configuration = AccountServerConfiguration()
                configuration.host = host
                configuration.port = port
                configuration.sessionValidity = .seconds(sessionSeconds)
                configuration.maxBodyBytes = maxBodyBytes
                configuration.connections.idleTimeout = .milliseconds(Int64((idleTimeoutSeconds * 1_000).rounded()))
                configuration.connections.bodyTimeout = .milliseconds(Int64((bodyTimeoutSeconds * 1_000).rounded()))
                configuration.connections.maxConnections = maxConnections
                configuration.connections.maxConnectionsPerClient = maxConnectionsPerClient
                configuration.connections.streamsPerSession = streamsPerSession
                configuration.connections.streamsPerAccount = streamsPerAccount
                configuration.trustedProxies = trustedProxies.compactMap(AddressBlock.init)
                configuration.forwardedHeader = ForwardedHeader(forwardedHeader) ?? .xForwardedFor
                configuration.heartbeat = .milliseconds(Int64((heartbeatSeconds * 1_000).rounded()))
                configuration.confirmsSignups = signups != nil
                configuration.admin = admin
                configuration.secureCookies = secureCookies
                configuration.metrics = metrics
                configuration.identityProviders = try identityProviders.map(Self.identityProvider)
                configuration.tracesRequests = otelEndpoint != nil
                configuration.webhooks.node = nodeId
                configuration.webhooks.interval = .milliseconds(Int64((webhookIntervalSeconds * 1_000).rounded()))
                configuration.webhooks.timeout = .milliseconds(Int64((webhookTimeoutSeconds * 1_000).rounded()))
                configuration.webhooks.leaseDuration = .milliseconds(Int64((webhookLeaseSeconds * 1_000).rounded()))
                let logger = Logger(label: "accountctl.serve")
                let server = AnnouncedServer(server: AccountServer(store: store, configuration: configuration, logger: logger), host: host)
                let tracing = try otelEndpoint.map(Self.traceExporter(endpoint:))
                let group = ServiceGroup(
                    configuration: ServiceGroupConfiguration(
                        services: (tracing.map { [.init(service: $0)] } ?? []) + [.init(service: server)],
                        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
                try await group.run()
            }
        }
    }

    /// The trace exporter of `--otel-endpoint`: swift-otel bootstrapped for traces only (logs and
    /// metrics stay with swift-log and `--metrics-token-file`), OTLP/HTTP with JSON, batches sent
    /// every second. A service to run beside the server.
    static func traceExporter(endpoint: String) throws -> any Service {
        guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw ToolError.input("--otel-endpoint: \(endpoint) is not an http or https URL")
        }
        #if OpenTelemetry
            var configuration = OTel.Configuration.default
            configuration.serviceName = "accountctl"
            configuration.diagnosticLogLevel = .error
            configuration.logs.enabled = false
            configuration.metrics.enabled = false
            configuration.traces.otlpExporter.endpoint = endpoint
            configuration.traces.otlpExporter.protocol = .httpJSON
            configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
            do {
                return try OTel.bootstrap(configuration: configuration)
            } catch {
                throw ToolError.input("--otel-endpoint: \(error)")
            }
        #else
            throw ToolError.input(
                "--otel-endpoint: this accountctl was built without OpenTelemetry; build it with `swift build --traits OpenTelemetry`")
        #endif
    }

    /// The metrics endpoint of `--metrics-token-file`: bootstraps swift-metrics with a Prometheus
    /// registry (once for the process) and renders that registry.
    static func metricsEndpoint(tokenFile: String) throws -> MetricsEndpoint {
        let text: String
        do {
            text = try String(contentsOfFile: tokenFile, encoding: .utf8)
        } catch {
            throw ToolError.input("--metrics-token-file: cannot read \(tokenFile): \(error.localizedDescription)")
        }
        let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.count >= 16, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ToolError.input("--metrics-token-file: the token (the file's first line) needs 16 or more printable ASCII characters")
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return MetricsEndpoint(bearerToken: token) { registry.emitToBuffer() }
    }
}

extension Serve {
    /// A provider from `--identity-provider`'s `key=value,…` form.
    static func identityProvider(_ spec: String) throws -> IdentityProviderConfiguration {
        var fields: [String: [String]] = [:]
        for part in spec.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, !pair[1].isEmpty else { throw ValidationError("--identity-provider: \(part) is not key=value") }
            fields[pair[0], default: []].append(pair[1])
        }
        let known: Set = [
            "id", "issuer", "jwks", "client-id", "email-user-id", "nonce", "alg", "preset", "token-url", "revoke-url", "team-id", "key-id",
            "private-key", "client-secret-file"
        ]
        if let unknown = fields.keys.first(where: { !known.contains($0) }) { throw ValidationError("--identity-provider: unknown key \(unknown)") }
        let clientIds = fields["client-id"] ?? []
        var provider: IdentityProviderConfiguration
        switch fields["preset"]?.last {
        case "apple": provider = .signInWithApple(clientIds: clientIds)
        case "google": provider = .google(clientIds: clientIds)
        case nil: provider = IdentityProviderConfiguration(id: "", issuer: "", jwksURL: "", clientIds: clientIds)
        case let other?: throw ValidationError("--identity-provider: no preset \(other) (apple, google)")
        }
        if let id = fields["id"]?.last { provider.id = id }
        if let issuer = fields["issuer"]?.last { provider.issuer = issuer }
        if let jwks = fields["jwks"]?.last { provider.jwksURL = jwks }
        if let flag = fields["email-user-id"]?.last {
            guard let value = Bool(flag) else { throw ValidationError("--identity-provider: email-user-id must be true or false") }
            provider.emailBecomesUserId = value
        }
        if let nonce = fields["nonce"]?.last {
            guard let form = IdentityProviderConfiguration.NonceForm(rawValue: nonce) else {
                throw ValidationError("--identity-provider: nonce must be raw or sha256-hex")
            }
            provider.nonce = form
        }
        if let algorithms = fields["alg"] {
            guard algorithms.allSatisfy(["RS256", "ES256"].contains) else { throw ValidationError("--identity-provider: alg must be RS256 or ES256") }
            provider.algorithms = Set(algorithms)
        }
        provider.tokenEndpoints = try tokenEndpoints(fields, preset: fields["preset"]?.last, clientId: clientIds.first)
        if let problem = provider.problem { throw ValidationError("--identity-provider: \(problem)") }
        return provider
    }

    /// The token endpoints of `--identity-provider`: with `team-id`, `key-id` and `private-key=FILE`
    /// (Apple's signed client secret) or `client-secret-file=FILE`, and `token-url` and `revoke-url`
    /// (Apple's preset fills them).
    static func tokenEndpoints(_ fields: [String: [String]], preset: String?, clientId: String?) throws -> ProviderTokenEndpoints? {
        let keyFile = fields["private-key"]?.last
        let secretFile = fields["client-secret-file"]?.last
        guard keyFile != nil || secretFile != nil else {
            if fields["token-url"] != nil || fields["revoke-url"] != nil || fields["team-id"] != nil || fields["key-id"] != nil {
                throw ValidationError("--identity-provider: token endpoints need private-key=FILE (with team-id, key-id) or client-secret-file=FILE")
            }
            return nil
        }
        guard let clientId else { throw ValidationError("--identity-provider: token endpoints need a client-id") }
        func read(_ path: String) throws -> String {
            do {
                return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw ValidationError("--identity-provider: cannot read \(path): \(error.localizedDescription)")
            }
        }
        let secret: ProviderClientSecret
        if let keyFile {
            guard let team = fields["team-id"]?.last, let key = fields["key-id"]?.last else {
                throw ValidationError("--identity-provider: private-key needs team-id and key-id")
            }
            secret = .signedJWT(teamId: team, keyId: key, privateKeyPEM: try read(keyFile))
        } else {
            secret = .fixed(try read(secretFile ?? ""))
        }
        let apple = ProviderTokenEndpoints.apple(clientId: clientId, teamId: "", keyId: "", privateKeyPEM: "")
        guard let tokenURL = fields["token-url"]?.last ?? (preset == "apple" ? apple.tokenURL : nil),
            let revokeURL = fields["revoke-url"]?.last ?? (preset == "apple" ? apple.revokeURL : nil)
        else {
            throw ValidationError("--identity-provider: token endpoints need token-url and revoke-url")
        }
        return ProviderTokenEndpoints(tokenURL: tokenURL, revokeURL: revokeURL, clientId: clientId, clientSecret: secret)
    }
}

/// The server, announcing its address on standard output once it listens.
private struct AnnouncedServer: Service {
    let server: AccountServer
    let host: String

    func run() async throws {
        try await server.run { port in
            FileHandle.standardOutput.write(Data("serving on http://\(host):\(port)\n".utf8))
        }
    }
}

/// Appends each message for a user id's owner (a password reset, a signup confirmation, an
/// already-registered notice) to a file as one JSON line with its `kind`, for a mailer to send.
private final class Outbox: Sendable {
    let path: String

    init(path: String) throws {
        self.path = path
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw ToolError.input("cannot create the outbox \(path)")
            }
        }
    }

    func deliver(_ request: PasswordResetRequest) {
        append([
            "kind": "password-reset", "accountId": request.accountId, "userId": request.userId, "token": request.token,
            "expiresAt": ISO8601DateFormatter().string(from: request.expiresAt)
        ])
    }

    func deliver(_ message: SignupConfirmationMessage) {
        switch message {
        case let .confirm(userId, token, expiresAt):
            append(["kind": "signup-confirmation", "userId": userId, "token": token, "expiresAt": ISO8601DateFormatter().string(from: expiresAt)])
        case let .alreadyRegistered(userId):
            append(["kind": "already-registered", "userId": userId])
        }
    }

    /// Appends one line; a failure is reported on standard error (the request was answered already).
    private func append(_ entry: [String: String]) {
        do {
            var line = try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys])
            line.append(0x0A)
            // O_APPEND: one write(2) per line lands whole at the end, even with two outboxes (or
            // two servers) on one file.
            let descriptor = open(path, O_WRONLY | O_APPEND)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(descriptor) }
            let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == line.count else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            printError("could not write a \(entry["kind"] ?? "message") to \(path): \(error)")
        }
    }
}
