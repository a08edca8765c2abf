//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Hummingbird
import Logging
import ServiceLifecycle

/// Serves `router` on 127.0.0.1, on a port the system picks, while `body` runs with that port;
/// then shuts it down (cancelling what still runs, a stalled answer say), whatever `body` did.
/// The peers the tests stand up on loopback (an OpenID provider, a webhook receiver, an OTLP
/// collector) run this way.
///
/// - Parameters:
///   - router: The peer's routes.
///   - label: The peer's logger label; it logs at `logLevel` and above only.
///   - body: Runs while the peer serves.
/// - Throws: What `body` threw, or `CancellationError` when the peer did not start.
func withLoopbackApplication(
    _ router: Router<BasicRequestContext>, label: String, logLevel: Logger.Level = .critical, _ body: (Int) async throws -> Void
) async throws {
    let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
    var logger = Logger(label: label)
    logger.logLevel = logLevel
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: app)], logger: logger))
    let running = Task { try await group.run() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next(), port > 0 else {
        await group.triggerGracefulShutdown()
        throw CancellationError()
    }
    let outcome: Result<Void, any Error>
    do {
        try await body(port)
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    await group.triggerGracefulShutdown()
    running.cancel()
    _ = await running.result
    try outcome.get()
}

/// Waits (polling every 50 ms, up to `seconds`) until `condition` holds.
///
/// - Returns: Whether it held in time.
func eventually(seconds: Int, _ condition: () async throws -> Bool) async throws -> Bool {
    for _ in 0..<(seconds * 20) {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return false
}
