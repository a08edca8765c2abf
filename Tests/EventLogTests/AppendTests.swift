//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Testing

@testable import EventLog

@Suite("Appending and reading")
struct AppendTests {
    @Test("records get gap-free positions, stream versions and every stored field back")
    func appendAndRead() async throws {
        try await withTemporaryLog { log, _ in
            let id = UUID()
            let metadata = EventMetadata(actor: "admin", correlationID: "req-1", causationID: "cmd-9", extra: ["ip": "10.0.0.1"])
            let first = try await log.append(
                ProposedEvent(
                    eventID: id, type: "account.created", schemaVersion: 3, metadata: metadata,
                    payload: Data([0, 1, 2, 255])), to: "alice", expectedVersion: .noStream)
            #expect(first == AppendResult(positions: 1...1, streamVersion: 1, wasDuplicate: false))
            let second = try await log.append([event("a"), event("b")], to: "bob")
            #expect(second.positions == 2...3)
            #expect(second.streamVersion == 2)
            let third = try await log.append(event("c"), to: "alice", expectedVersion: .exact(1))
            #expect(third == AppendResult(positions: 4...4, streamVersion: 2, wasDuplicate: false))

            let all = try await log.read()
            #expect(all.map(\.position) == [1, 2, 3, 4])
            #expect(all.map(\.streamID) == ["alice", "bob", "bob", "alice"])
            #expect(all.map(\.streamVersion) == [1, 1, 2, 2])
            #expect(all.map(\.type) == ["account.created", "a", "b", "c"])
            let stored = try #require(all.first)
            #expect(stored.eventID == id)
            #expect(stored.schemaVersion == 3)
            #expect(stored.metadata == metadata)
            #expect(stored.payload == Data([0, 1, 2, 255]))
            #expect(abs(stored.timestamp.timeIntervalSinceNow) < 60)
            #expect(try log.lastPosition() == 4)
            #expect(try log.record(at: 3)?.type == "b")
            #expect(try log.record(at: 5) == nil)
            #expect(try log.position(ofEvent: id) == 1)
        }
    }

    @Test("reads forward, backward, by stream and from a stream version")
    func reads() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            for index in 1...10 {
                _ = try await log.append(event("e", "\(index)"), to: index.isMultiple(of: 2) ? "even" : "odd")
            }
            await #expect(try log.read(from: 4, limit: 3).map(\.position) == [4, 5, 6])
            #expect(try log.read(from: 4, direction: .backward, limit: 3).map(\.position) == [4, 3, 2])
            #expect(try log.read(from: 100, direction: .backward, limit: 2).map(\.position) == [10, 9])
            await #expect(try log.read(from: 11).isEmpty)
            await #expect(try log.readStream("even").map(\.text) == ["2", "4", "6", "8", "10"])
            await #expect(try log.readStream("odd", from: 4).map(\.streamVersion) == [4, 5])
            await #expect(try log.readStream("none").isEmpty)
            #expect(try log.streamVersion("even") == 5)
            #expect(try log.streamVersion("none") == nil)
            // A stream whose id is a prefix of another does not see the other's events.
            _ = try await log.append(event(), to: "od")
            #expect(try log.streamVersion("od") == 1)
            await #expect(try log.readStream("od").count == 1)
            var replayed: [UInt64] = []
            try log.replay(from: 3, batchSize: 4) { record in
                replayed.append(record.position)
                return record.position < 9
            }
            #expect(replayed == Array(3...9))
        }
    }

    @Test("a wrong expected version is a typed error and writes nothing")
    func versionConflicts() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            _ = try await log.append(event(), to: "s", expectedVersion: .noStream)
            await #expect(throws: EventLogError.wrongExpectedVersion(stream: "s", expected: .noStream, actual: 1)) {
                try await log.append(event(), to: "s", expectedVersion: .noStream)
            }
            await #expect(throws: EventLogError.wrongExpectedVersion(stream: "s", expected: .exact(5), actual: 1)) {
                try await log.append([event(), event()], to: "s", expectedVersion: .exact(5))
            }
            await #expect(throws: EventLogError.wrongExpectedVersion(stream: "t", expected: .exact(1), actual: nil)) {
                try await log.append(event(), to: "t", expectedVersion: .exact(1))
            }
            #expect(try log.lastPosition() == 1)
            #expect(try log.streamVersion("t") == nil)
            let message = EventLogError.wrongExpectedVersion(stream: "s", expected: .exact(5), actual: 1).description
            #expect(message.contains("\"s\"") && message.contains("version 1") && message.contains("version 5"))
        }
    }

    @Test("appending the same event ids again is an idempotent no-op")
    func idempotentRetries() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            let batch = [event("x"), event("y")]
            let original = try await log.append(batch, to: "s", expectedVersion: .noStream)
            _ = try await log.append(event(), to: "other")
            // The retry would fail its version check, but the ids show it already happened.
            let retry = try await log.append(batch, to: "s", expectedVersion: .noStream)
            #expect(retry == AppendResult(positions: original.positions, streamVersion: 2, wasDuplicate: true))
            #expect(try log.lastPosition() == 3)
            // A batch that is only partly in the log is refused.
            let partial = [batch[1], event("z")]
            await #expect(throws: EventLogError.duplicateEventID(batch[1].eventID, existingPosition: 2)) {
                try await log.append(partial, to: "s")
            }
            // The same id twice in one append is refused before it reaches the writer.
            let twice = event()
            await #expect(throws: EventLogError.self) { try await log.append([twice, twice], to: "s") }
            #expect(try log.lastPosition() == 3)
        }
    }

    @Test("bad stream ids, empty appends and oversized events are refused with reasons")
    func badInput() async throws {
        var options = relaxed
        options.maxPayloadBytes = 1_000
        try await withTemporaryLog(options: options) { (log: EventLog, _: TemporaryDirectory) async throws in
            await #expect(throws: EventLogError.invalidStreamID("", reason: "it is empty")) { try await log.append(event(), to: "") }
            await #expect(throws: EventLogError.self) { try await log.append(event(), to: "a\u{0}b") }
            await #expect(throws: EventLogError.self) { try await log.append(event(), to: String(repeating: "x", count: 401)) }
            await #expect(throws: EventLogError.invalidEvent(reason: "an append needs at least one event")) { try await log.append([], to: "s") }
            await #expect(throws: EventLogError.self) { try await log.append(event(""), to: "s") }
            await #expect(throws: EventLogError.self) { try await log.append(event("t", String(repeating: "p", count: 1_001)), to: "s") }
            #expect(try log.lastPosition() == 0)
            await #expect(try log.verify().isIntact)
        }
    }

    @Test("a batch queued in parts: outcomes in order, refused appends (a whole part among them) write nothing, the rest in order")
    func batchInParts() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            // More than three parts of 64: the second part is refused whole (empty stream ids), and
            // so is every 10th append of the others.
            let part = EventLog.preparedPerQueueing
            let refused = Set((part..<(2 * part)).map { $0 } + stride(from: 0, to: 3 * part + 9, by: 10).map { $0 })
            let appends = (0..<(3 * part + 9)).map { index in
                StreamAppend(streamID: refused.contains(index) ? "" : "s\(index % 7)", events: [event("t\(index)")], expectedVersion: .any)
            }
            let outcomes = await log.appendBatch(appends)
            #expect(outcomes.count == appends.count)
            var next: UInt64 = 1
            for (index, outcome) in outcomes.enumerated() {
                if refused.contains(index) {
                    #expect(throws: EventLogError.invalidStreamID("", reason: "it is empty")) { try outcome.get() }
                } else {
                    #expect((try? outcome.get())?.positions == next...next, "append \(index)")
                    next += 1
                }
            }
            #expect(next - 1 == UInt64(appends.count - refused.count))
            let stored = try await log.read(from: 1, limit: 1_000)
            #expect(stored.map(\.type) == appends.indices.filter { !refused.contains($0) }.map { "t\($0)" })
            // A batch whose last part is refused whole still answers (the writer stops waiting for it).
            let tail = (0..<(part + 3)).map { index in
                StreamAppend(streamID: index < 3 ? "tail" : "", events: [event("u\(index)")], expectedVersion: .any)
            }
            let tailOutcomes = await log.appendBatch(tail)
            #expect(tailOutcomes.prefix(3).allSatisfy { (try? $0.get()) != nil })
            #expect(tailOutcomes.dropFirst(3).allSatisfy { (try? $0.get()) == nil })
            #expect(try log.lastPosition() == next + 2)
        }
    }

    @Test("8 concurrent appenders × 1,000 appends: gap-free positions, per-stream order kept")
    func concurrentAppenders() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            let writers = 8
            let perWriter = 1_000
            let results = try await withThrowingTaskGroup(of: [AppendResult].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var results: [AppendResult] = []
                        for index in 0..<perWriter {
                            // Each writer checks its own stream's version: no conflicts expected.
                            results.append(
                                try await log.append(
                                    event("e", "\(writer)-\(index)"), to: "writer-\(writer)",
                                    expectedVersion: index == 0 ? .noStream : .exact(UInt64(index))))
                        }
                        return results
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let positions = results.map(\.positions.lowerBound).sorted()
            #expect(positions == Array(1...UInt64(writers * perWriter)))
            let records = try await log.read(limit: .max)
            #expect(records.map(\.position) == Array(1...UInt64(writers * perWriter)))
            for writer in 0..<writers {
                let stream = try await log.readStream("writer-\(writer)")
                #expect(stream.map(\.text) == (0..<perWriter).map { "\(writer)-\($0)" })
                #expect(stream.map(\.streamVersion) == Array(1...UInt64(perWriter)))
            }
            await #expect(try log.verify().isIntact)
        }
    }

    @Test("concurrent appenders racing on one stream: exactly one wins each version")
    func racingOnOneStream() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<16 {
                    group.addTask { (try? await log.append(event(), to: "hot", expectedVersion: .noStream)) != nil }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try log.streamVersion("hot") == 1)
            #expect(try log.lastPosition() == 1)
        }
    }
}

@Suite("Event ids")
struct EventIDTests {
    @Test("random ids are version-4 UUIDs and do not repeat")
    func randomIDs() {
        let ids = (0..<10_000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(100) {
            #expect(id.uuidString[id.uuidString.index(id.uuidString.startIndex, offsetBy: 14)] == "4")
            #expect("89AB".contains(id.uuidString[id.uuidString.index(id.uuidString.startIndex, offsetBy: 19)]))
        }
    }

    @Test("ids drawn at once by 8 tasks, through many refills of the random pool, never repeat")
    func concurrentIDs() async {
        let batches = await withTaskGroup(of: [UUID].self) { group in
            for index in 0..<8 {
                group.addTask { (0..<2_000).map { _ in index.isMultiple(of: 2) ? UUID.random() : UUID.timeOrdered() } }
            }
            return await group.reduce(into: [UUID]()) { $0 += $1 }
        }
        #expect(batches.count == 16_000)
        #expect(Set(batches).count == 16_000)
        // The random part of the time-ordered ids (bytes 8...15, 62 bits) is spread too, not a counter.
        let lowBytes = batches.map { withUnsafeBytes(of: $0.uuid) { $0[15] } }
        #expect(Set(lowBytes).count > 200)
    }

    @Test("time-ordered ids are version-7 UUIDs that carry the time they were made and sort by it; the default id is one")
    func timeOrderedIDs() async throws {
        let before = UInt64(Date().timeIntervalSince1970 * 1_000)
        var ids: [UUID] = []
        for _ in 0..<5 {
            ids.append(UUID.timeOrdered())
            try await Task.sleep(for: .milliseconds(2))
        }
        let after = UInt64(Date().timeIntervalSince1970 * 1_000) + 1
        func bytes(_ id: UUID) -> [UInt8] { withUnsafeBytes(of: id.uuid) { Array($0) } }
        for id in ids {
            let raw = bytes(id)
            #expect(raw[6] >> 4 == 7 && raw[8] >> 6 == 0b10)
            let milliseconds = raw[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            #expect((before...after).contains(milliseconds))
        }
        // Made milliseconds apart: byte order is creation order.
        #expect(ids.map(bytes).sorted { $0.lexicographicallyPrecedes($1) } == ids.map(bytes))
        let many = (0..<10_000).map { _ in UUID.timeOrdered() }
        #expect(Set(many).count == many.count)
        #expect(bytes(ProposedEvent(type: "t", payload: Data()).eventID)[6] >> 4 == 7)
    }
}

@Suite("Claims: unique keys held by one stream")
struct ClaimTests {
    @Test("a claim held by another stream refuses the append; releasing frees it")
    func claims() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            _ = try await log.append(event("created"), to: "account-1", expectedVersion: .noStream, claims: ["userid:leland@stanford.edu"])
            #expect(try log.claimOwner("userid:leland@stanford.edu") == "account-1")
            await #expect(throws: EventLogError.claimTaken("userid:leland@stanford.edu", owner: "account-1")) {
                try await log.append(event("created"), to: "account-2", expectedVersion: .noStream, claims: ["userid:leland@stanford.edu"])
            }
            #expect(try log.streamVersion("account-2") == nil)
            // The holder may claim it again (a no-op) and move to another key.
            _ = try await log.append(
                event("renamed"), to: "account-1", claims: ["userid:jane@stanford.edu"], releases: ["userid:leland@stanford.edu"])
            #expect(try log.claimOwner("userid:leland@stanford.edu") == nil)
            #expect(try log.claimOwner("userid:jane@stanford.edu") == "account-1")
            // Another stream cannot release what it does not hold.
            _ = try await log.append(event("noise"), to: "account-3", releases: ["userid:jane@stanford.edu"])
            #expect(try log.claimOwner("userid:jane@stanford.edu") == "account-1")
            _ = try await log.append(event("created"), to: "account-2", expectedVersion: .noStream, claims: ["userid:leland@stanford.edu"])
            #expect(try log.claimOwner("userid:leland@stanford.edu") == "account-2")
        }
    }

    @Test("50 concurrent signups for one key: exactly one stream gets it")
    func concurrentClaims() async throws {
        try await withTemporaryLog(options: relaxed) { (log: EventLog, _: TemporaryDirectory) async throws in
            let winners = await withTaskGroup(of: String?.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let stream = "account-\(index)"
                        let result = try? await log.append(event("created"), to: stream, expectedVersion: .noStream, claims: ["userid:same"])
                        return result == nil ? nil : stream
                    }
                }
                return await group.reduce(into: [String]()) { if let stream = $1 { $0.append(stream) } }
            }
            #expect(winners.count == 1)
            #expect(try log.claimOwner("userid:same") == winners.first)
            #expect(try log.lastPosition() == 1)
        }
    }
}
