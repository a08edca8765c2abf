//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncAlgorithms
import Logging
import ServiceLifecycle

/// What a Server-Sent Events response is fed: an item of its source, or a heartbeat.
enum EventFeedChunk<Item: Sendable>: Sendable {
    case item(Item)
    case heartbeat
}

/// The machinery behind the server's Server-Sent Events responses (the account's notifications and
/// the audit console's tail): a source task and a heartbeat timer hand their chunks to the
/// response one at a time.
///
/// Each hand-off waits until the response has taken the chunk (an `AsyncThrowingChannel`), so a
/// client that reads slowly slows the source down, down to the log's reads, and never misses a
/// record. (A buffered stream would drop what does not fit while the client lags, and the client
/// would not know.)
///
/// The feed ends when the source returns, when `consume` returns false, after `lifetime` (if one
/// is given), when the server shuts down gracefully (so that its shutdown does not wait for
/// clients to hang up), or when the response's task is cancelled (the client went away). A failing
/// source is logged; with `passingFailures` the failure then ends the response with an error,
/// otherwise the response ends normally and the client reconnects with `Last-Event-ID`.
struct EventFeed<Item: Sendable>: Sendable {
    typealias Chunk = EventFeedChunk<Item>
    /// Hands an item to the response; returns once the response has taken it (or the feed ended).
    typealias Yield = @Sendable (Item) async -> Void

    let heartbeat: Duration
    var lifetime: Duration?
    let logger: Logger
    /// What the log line of a failing source says.
    let failure: Logger.Message
    var passingFailures = false

    /// Runs `source` and the heartbeats until the feed ends, handing each chunk to `consume`.
    func run(source: @escaping @Sendable (_ yield: Yield) async throws -> Void, consume: (Chunk) async throws -> Bool) async throws {
        let channel = AsyncThrowingChannel<Chunk, any Error>()
        let producers = Task {
            await withGracefulShutdownHandler {
                await produce(source, into: channel)
            } onGracefulShutdown: {
                channel.finish()
            }
        }
        defer { producers.cancel() }
        for try await chunk in channel {
            guard try await consume(chunk) else { return }
        }
    }

    private func produce(
        _ source: @escaping @Sendable (_ yield: Yield) async throws -> Void, into channel: AsyncThrowingChannel<Chunk, any Error>
    ) async {
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await source { await channel.send(.item($0)) }
            }
            group.addTask { [heartbeat, lifetime] in
                let end = lifetime.map { ContinuousClock.now + $0 }
                while !Task.isCancelled {
                    let wait = end.map { min(heartbeat, $0 - ContinuousClock.now) } ?? heartbeat
                    guard wait > .zero else { return }
                    try await Task.sleep(for: wait)
                    await channel.send(.heartbeat)
                }
            }
            do {
                try await group.next()
                channel.finish()
            } catch is CancellationError {
                channel.finish()
            } catch {
                logger.error(failure, metadata: ["error": "\(error)"])
                if passingFailures { channel.fail(error) } else { channel.finish() }
            }
            group.cancelAll()
        }
    }
}
