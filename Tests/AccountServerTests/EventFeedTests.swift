//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Logging
import Testing

@testable import AccountServer

/// The feed behind both Server-Sent Events responses, on its own: how it ends, and what a failing
/// source does to the response.
@Suite("EventFeed: the source and heartbeats behind the server's event streams")
struct EventFeedTests {
    struct SourceFailed: Error, Equatable {}

    private func feed(heartbeat: Duration = .seconds(60), lifetime: Duration? = nil, passingFailures: Bool = false) -> EventFeed<Int> {
        var feed = EventFeed<Int>(heartbeat: heartbeat, lifetime: lifetime, logger: Logger(label: "test"), failure: "test feed failed")
        feed.passingFailures = passingFailures
        return feed
    }

    @Test("a source that outruns the response loses nothing: every item arrives, in order, and the feed ends when the source returns")
    func itemsInOrder() async throws {
        // A buffered stream of 256 dropped most of these while the response was busy writing.
        var seen: [Int] = []
        try await feed().run { yield in
            for value in 1...2_000 { await yield(value) }
        } consume: { chunk in
            if case let .item(value) = chunk { seen.append(value) }
            if seen.count % 100 == 0 { try await Task.sleep(for: .milliseconds(1)) }
            return true
        }
        #expect(seen == Array(1...2_000))
    }

    @Test("a failing source: the response fails with the error when failures pass, else it ends normally after what came before")
    func failingSource() async throws {
        for passing in [true, false] {
            var seen: [Int] = []
            let outcome: Result<Void, any Error>
            do {
                try await feed(passingFailures: passing).run { yield in
                    await yield(1)
                    await yield(2)
                    throw SourceFailed()
                } consume: { chunk in
                    if case let .item(value) = chunk { seen.append(value) }
                    return true
                }
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            #expect(seen == [1, 2])
            switch outcome {
            case .success: #expect(!passing, "the failure did not reach the response")
            case let .failure(error): #expect(passing && error is SourceFailed, "\(error)")
            }
        }
    }

    @Test("consume returning false ends the feed and cancels a source that would wait forever", .timeLimit(.minutes(3)))
    func consumerEnds() async throws {
        // The source reports here when its wait ends with cancellation.
        let (cancellations, cancelled) = AsyncStream.makeStream(of: Bool.self)
        var seen: [Int] = []
        try await feed().run { yield in
            await yield(7)
            do {
                try await Task.sleep(for: .seconds(3_600))
            } catch {
                cancelled.yield(error is CancellationError)
                cancelled.finish()
                throw error
            }
        } consume: { chunk in
            if case let .item(value) = chunk { seen.append(value) }
            return false
        }
        #expect(seen == [7])
        // The source is cancelled when run returns; wait for its task to notice, however long a
        // loaded machine takes to run it (a source that is never cancelled runs into the time limit).
        var reports = cancellations.makeAsyncIterator()
        #expect(await reports.next() == true)
    }

    @Test("with a lifetime, heartbeats arrive while the source is quiet and the feed ends by itself")
    func lifetimeEnds() async throws {
        var heartbeats = 0
        var items = 0
        try await feed(heartbeat: .milliseconds(20), lifetime: .milliseconds(200)).run { _ in
            try await Task.sleep(for: .seconds(3_600))
        } consume: { chunk in
            switch chunk {
            case .heartbeat: heartbeats += 1
            case .item: items += 1
            }
            return true
        }
        #expect(items == 0)
        #expect(heartbeats >= 1)
    }
}
