//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import EventLog
import EventLogProtocol
import Foundation
import Logging
import ServiceLifecycle
import SpeziAccount
import SpeziAccountStore
import Synchronization
import Testing

/// An ``AccountServer`` in this process on a real socket (a port the system picked), over a store
/// in a temporary folder. Real Argon2id unless told otherwise; the store's clock is the fixture's.
struct LiveServer {
    let port: Int
    let store: AccountStore
    let fixture: ServerFixture
    let server: AccountServer

    /// A signup with real password hashing; returns the token and the account id.
    func signup(
        _ userId: String, password: String = "correct horse battery", source: String? = nil
    ) async throws -> (
        token: String, accountId: String
    ) {
        let answer = try await RawHTTP.send(
            port: port, source: source, "POST", "/v1/accounts",
            json: #"{"userId":"\#(userId)","password":"\#(password)","name":{"givenName":"Ada"}}"#)
        try #require(answer.status == 201, "\(answer.status) \(answer.body)")
        let account = try #require(answer.json["account"] as? [String: Any])
        return (try #require(answer.json["token"] as? String), try #require(account["accountId"] as? String))
    }

    func login(_ userId: String, _ password: String, source: String? = nil, cookies: [String] = []) async throws -> RawHTTP.Answer {
        try await RawHTTP.send(
            port: port, source: source, "POST", "/v1/sessions", json: #"{"userId":"\#(userId)","password":"\#(password)"}"#,
            headers: cookies.isEmpty ? [:] : ["Cookie": cookies.joined(separator: "; ")])
    }

    /// Runs `body` against a live server; stops it and removes the store after.
    static func with(
        configuration: AccountServerConfiguration = AccountServerConfiguration(), realHashing: Bool = true,
        tweaks: StoreTweaks = StoreTweaks(), logger: Logger? = nil,
        _ body: @Sendable (LiveServer) async throws -> Void
    ) async throws {
        let fixture = ServerFixture()
        var options = fixture.options()
        if realHashing {
            options.passwordHashing = .recommended
            options.allowWeakPasswordParameters = false
        }
        if let queue = tweaks.maxQueuedPasswordChecks { options.maxQueuedPasswordChecks = queue }
        if let timeout = tweaks.readYourWritesTimeout { options.projections.readYourWritesTimeout = timeout }
        if let throttling = tweaks.loginThrottling { options.loginThrottling = throttling }
        if let limits = tweaks.limits { options.limits = limits }
        let store: AccountStore
        if let wrap = tweaks.wrapLog {
            try FileManager.default.createDirectory(at: fixture.directory, withIntermediateDirectories: true)
            var logOptions = EventLogOptions()
            logOptions.sync = .relaxed
            let log = try EventLog(path: fixture.directory.appendingPathComponent("log").path, options: logOptions)
            store = try await AccountStore(directory: fixture.directory.path, log: wrap(log), options: options)
        } else {
            store = try await AccountStore(directory: fixture.directory.path, options: options)
        }
        var configuration = configuration
        configuration.port = 0
        let logger =
            logger
            ?? {
                var logger = Logger(label: "live-server-test")
                logger.logLevel = .warning
                return logger
            }()
        let server = AccountServer(store: store, configuration: configuration, logger: logger)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: ListeningServer(server: server, ports: portSink))], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            await group.triggerGracefulShutdown()
            await store.close()
            throw CancellationError()
        }
        let live = LiveServer(port: port, store: store, fixture: fixture, server: server)
        let outcome: Result<Void, any Error>
        do {
            try await body(live)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await group.triggerGracefulShutdown()
        _ = await running.result
        await store.close()
        try? FileManager.default.removeItem(at: fixture.directory)
        try outcome.get()
    }
}

/// Store options a test changes.
struct StoreTweaks {
    var maxQueuedPasswordChecks: Int?
    var readYourWritesTimeout: Duration?
    var loginThrottling: LoginThrottling?
    var limits: AccountStoreLimits?
    /// Puts a backend of the test's own around the store's LMDB log (to count what it reads).
    var wrapLog: (@Sendable (EventLog) -> any EventLogBackend)?
}

/// The server as a service that reports its port.
private struct ListeningServer: Service {
    let server: AccountServer
    let ports: AsyncStream<Int>.Continuation

    func run() async throws {
        try await server.run { port in ports.yield(port) }
    }
}
