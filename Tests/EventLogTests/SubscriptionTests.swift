//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import Testing

@Suite("Catch-up subscriptions")
struct SubscriptionTests {
    @Test("history then live records with no gap and no duplicate while appends continue")
    func switchOver() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            for index in 0..<500 { _ = try await log.append(event("e", "\(index)"), to: "s\(index % 7)") }
            let total = 3_000
            // Appends keep going while the subscriber catches up and switches to live records.
            let appender = Task {
                for index in 500..<total { _ = try await log.append(event("e", "\(index)"), to: "s\(index % 7)") }
            }
            var seen: [UInt64] = []
            for try await record in log.subscribe(after: 0, batchSize: 64) {
                seen.append(record.position)
                #expect(record.text == "\(record.position - 1)")
                if seen.count == total { break }
            }
            try await appender.value
            #expect(seen == Array(1...UInt64(total)))
        }
    }

    @Test("starting after a position, and one stream only")
    func fromPositionAndStream() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            for index in 1...20 { _ = try await log.append(event("e", "\(index)"), to: index.isMultiple(of: 3) ? "three" : "other") }
            var fromTen: [UInt64] = []
            for try await record in log.subscribe(after: 10) {
                fromTen.append(record.position)
                if record.position == 20 { break }
            }
            #expect(fromTen == Array(11...20))

            // A stream subscription starting at global position 10, with the stream's earlier events skipped.
            let streamTask = Task {
                var texts: [String] = []
                for try await record in log.subscribe(after: 10, stream: "three", batchSize: 2) {
                    #expect(record.streamID == "three")
                    texts.append(record.text)
                    if texts.count == 5 { break }
                }
                return texts
            }
            _ = try await log.append(event("e", "live-other"), to: "other")
            _ = try await log.append(event("e", "live-three"), to: "three")
            _ = try await log.append(event("e", "live-three-2"), to: "three")
            let texts = try await streamTask.value
            #expect(texts == ["12", "15", "18", "live-three", "live-three-2"])
        }
    }

    @Test("cancelling the consumer ends a waiting subscription cleanly")
    func cancellation() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            _ = try await log.append(event(), to: "s")
            let (delivered, signal) = AsyncStream.makeStream(of: Void.self)
            let consumer = Task {
                // A consumer that ends early ends the waiting too.
                defer { signal.finish() }
                var count = 0
                for try await _ in log.subscribe() {
                    count += 1
                    signal.yield()
                }
                return count
            }
            // Cancel only once the record has arrived (waiting a fixed time races a loaded pool).
            var signals = delivered.makeAsyncIterator()
            _ = await signals.next()
            consumer.cancel()
            #expect(try await consumer.value == 1)
        }
    }

    @Test("closing the log ends its subscriptions")
    func closing() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let log = try EventLog(path: directory.path("log"), options: relaxed)
        _ = try await log.append([event(), event()], to: "s")
        let (delivered, signal) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            // A consumer that ends early ends the waiting too.
            defer { signal.finish() }
            var count = 0
            for try await _ in log.subscribe() {
                count += 1
                signal.yield()
            }
            return count
        }
        // Close only once both records have arrived (waiting a fixed time races a loaded pool).
        var signals = delivered.makeAsyncIterator()
        _ = await signals.next()
        _ = await signals.next()
        await log.close()
        #expect(try await consumer.value == 2)
    }

    @Test("a slow consumer holds one batch at a time, not the whole backlog")
    func backpressure() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            _ = try await log.append((0..<1_000).map { _ in event() }, to: "s")
            var batches = log.subscribeBatches(after: 0, stream: nil, batchSize: 10).makeAsyncIterator()
            let first = try #require(try await batches.next())
            // Only the first batch was read; appending more does not reach the iterator until it asks.
            _ = try await log.append((0..<1_000).map { _ in event() }, to: "s")
            var sizes = [first.count]
            var positions = first.map(\.position)
            while let batch = try await batches.next() {
                sizes.append(batch.count)
                positions += batch.map(\.position)
                if positions.last == 2_000 { break }
            }
            // Every pull handed over at most one batch, and all 2,000 records came once, in order.
            #expect(sizes.allSatisfy { $0 <= 10 }, "\(sizes.filter { $0 > 10 })")
            #expect(sizes.count >= 200)
            #expect(positions == Array(1...2_000))
        }
    }

    @Test("batch by batch: a consumer that pauses between pulls gets at most batchSize records per pull, all of them once, in order")
    func boundedBatches() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            _ = try await log.append((0..<1_000).map { _ in event() }, to: "s")
            var sizes: [Int] = []
            var positions: [UInt64] = []
            var appended = false
            for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 10) {
                sizes.append(batch.count)
                positions += batch.map(\.position)
                if !appended {
                    // A backlog of 1,000 more arrives while the consumer is busy with its first batch.
                    _ = try await log.append((0..<1_000).map { _ in event() }, to: "s")
                    appended = true
                }
                if positions.count == 2_000 { break }
            }
            #expect(sizes.allSatisfy { $0 >= 1 && $0 <= 10 })
            #expect(sizes.count == 200)
            #expect(positions == Array(1...2_000))
        }
    }
}
