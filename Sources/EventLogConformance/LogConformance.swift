//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Synchronization

/// The checks every `EventLogBackend` must pass, runnable from any test framework (this target
/// imports neither XCTest nor Testing): give it a way to open a fresh or existing log by name, and
/// call ``run()``; each check reports what it found. The project runs it for its own backends, and
/// a backend of your own can run it the same way.
///
/// ```swift
/// let kit = LogConformance(open: { name in try EventLog(path: root + "/" + name) })
/// for outcome in await kit.run() { #expect(outcome.passed, "\(outcome)") }
/// ```
public struct LogConformance: Sendable {
    /// The outcome of one check.
    public struct Outcome: Sendable, CustomStringConvertible {
        /// The check's name.
        public let check: String
        /// Nil when it passed, else what went wrong.
        public let failure: String?
        /// Whether the check passed.
        public var passed: Bool { failure == nil }
        /// One line.
        public var description: String { "\(check): \(failure ?? "passed")" }
    }

    /// A failed expectation inside a check.
    struct Mismatch: Error, CustomStringConvertible {
        let description: String
    }

    /// Opens the log named `name`: a new, empty one the first time, the same one again after it was closed.
    public let open: @Sendable (_ name: String) async throws -> any EventLogBackend
    /// Changes one byte of the stored record at a position of the (closed) log named `name`, so
    /// that `verify` must find it; nil skips that check (reported as failed, never silently).
    public let tamper: (@Sendable (_ name: String, _ position: UInt64) async throws -> Void)?

    /// A kit that opens logs with `open` and damages them with `tamper`.
    public init(
        open: @escaping @Sendable (_ name: String) async throws -> any EventLogBackend,
        tamper: (@Sendable (_ name: String, _ position: UInt64) async throws -> Void)? = nil
    ) {
        self.open = open
        self.tamper = tamper
    }

    /// The names of the checks, in the order ``run()`` runs them.
    public static let checks = [
        "expected-version matrix", "idempotent retries", "64 concurrent appenders over 16 streams", "claims under concurrency",
        "timestamps never decrease", "subscription from catch-up to live", "cancelled subscription ends", "verify finds a changed record",
        "reopen keeps everything", "limits give typed errors", "a closed log refuses", "batch appends"
    ]

    /// Runs every check, each on a log of its own.
    public func run() async -> [Outcome] {
        var outcomes: [Outcome] = []
        for check in Self.checks {
            outcomes.append(await run(check))
        }
        return outcomes
    }

    /// Runs one check by name.
    public func run(_ check: String) async -> Outcome {
        do {
            switch check {
            case "expected-version matrix": try await expectedVersions()
            case "idempotent retries": try await idempotentRetries()
            case "64 concurrent appenders over 16 streams": try await concurrentAppenders()
            case "claims under concurrency": try await claims()
            case "timestamps never decrease": try await timestamps()
            case "subscription from catch-up to live": try await subscription()
            case "cancelled subscription ends": try await cancelledSubscription()
            case "verify finds a changed record": try await verifyFindsDamage()
            case "reopen keeps everything": try await reopen()
            case "limits give typed errors": try await limits()
            case "a closed log refuses": try await closedLog()
            case "batch appends": try await batchAppends()
            default: throw Mismatch(description: "no such check")
            }
            return Outcome(check: check, failure: nil)
        } catch {
            return Outcome(check: check, failure: String(describing: error))
        }
    }

    // MARK: The checks

    func expectedVersions() async throws {
        try await using("expected-versions") { log in
            try await append(log, "s", .noStream)
            try await append(log, "s", .exact(1))
            try await append(log, "s", .any)
            try await append(log, "other", .any)
            for (expected, actual) in [(ExpectedVersion.noStream, UInt64?(3)), (.exact(2), 3), (.exact(4), 3)] {
                try await expectError(
                    EventLogError.wrongExpectedVersion(stream: "s", expected: expected, actual: actual), "append to s expecting \(expected)"
                ) { try await append(log, "s", expected) }
            }
            try await expectError(EventLogError.wrongExpectedVersion(stream: "new", expected: .exact(1), actual: nil), "exact on a new stream") {
                try await append(log, "new", .exact(1))
            }
            try expect(try await log.lastPosition() == 4, "refused appends wrote nothing")
            try expect(try await log.streamVersion("s") == 3, "the stream's version")
            try expect(try await log.streamVersion("new") == nil, "no version for a stream never written")
        }
    }

    func idempotentRetries() async throws {
        try await using("idempotent") { log in
            let batch = [event(), event()]
            let first = try await log.append(batch, to: "s", expectedVersion: .noStream, claims: [], releases: [])
            let again = try await log.append(batch, to: "s", expectedVersion: .noStream, claims: [], releases: [])
            try expect(first.positions == 1...2 && !first.wasDuplicate, "the first append")
            try expect(again.positions == first.positions && again.wasDuplicate && again.streamVersion == 2, "the retry answers the same positions")
            try expect(try await log.lastPosition() == 2, "the retry wrote nothing")
            try await expectError(EventLogError.duplicateEventID(batch[1].eventID, existingPosition: 2), "a batch with one known id") {
                _ = try await log.append([event(), batch[1]], to: "s", expectedVersion: .any, claims: [], releases: [])
            }
        }
    }

    func concurrentAppenders() async throws {
        try await using("concurrent") { log in
            let results = try await withThrowingTaskGroup(of: [AppendResult].self) { group in
                for writer in 0..<64 {
                    group.addTask {
                        var mine: [AppendResult] = []
                        for _ in 0..<8 {
                            mine.append(try await log.append([event()], to: "stream-\(writer % 16)", expectedVersion: .any, claims: [], releases: []))
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let positions = results.map(\.positions.lowerBound).sorted()
            try expect(positions == Array(1...512), "positions 1…512 without gaps or repeats")
            let records = try await readAll(log)
            try expect(records.map(\.position) == Array(1...512), "reads give 1…512")
            var versions: [String: UInt64] = [:]
            for record in records {
                let next = (versions[record.streamID] ?? 0) + 1
                try expect(
                    record.streamVersion == next, "stream \(record.streamID) version \(record.streamVersion) at \(record.position), expected \(next)")
                versions[record.streamID] = next
            }
            try expect(versions.count == 16 && versions.values.allSatisfy { $0 == 32 }, "32 events in each of 16 streams")
        }
    }

    func claims() async throws {
        try await using("claims") { log in
            let winners = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        (try? await log.append([event()], to: "claimer-\(index)", expectedVersion: .any, claims: ["key"], releases: [])) != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            try expect(winners == 1, "exactly one of 16 concurrent claims wins, \(winners) did")
            guard let owner = try await log.claimOwner("key") else { throw Mismatch(description: "the claim has no owner") }
            try expect(try await log.lastPosition() == 1, "the losers wrote nothing")
            try await expectError(EventLogError.claimTaken("key", owner: owner), "claiming a held key") {
                _ = try await log.append([event()], to: "late", expectedVersion: .any, claims: ["key"], releases: [])
            }
            _ = try await log.append([event()], to: owner, expectedVersion: .any, claims: [], releases: ["key"])
            try expect(try await log.claimOwner("key") == nil, "a released claim is free")
            _ = try await log.append([event()], to: "late", expectedVersion: .any, claims: ["key"], releases: [])
            try expect(try await log.claimOwner("key") == "late", "a freed claim can be taken")
        }
    }

    func timestamps() async throws {
        try await using("timestamps") { log in
            for index in 0..<20 { try await append(log, "s\(index % 3)", .any) }
            // Imported events keep their own times, yet never go back before the last record.
            let old = Date(timeIntervalSince1970: 1_000_000)
            _ = try await log.appendImported([(event(), old)], to: "imported", expectedVersion: .any, claims: [], releases: [])
            let records = try await readAll(log)
            for (earlier, later) in zip(records, records.dropFirst()) {
                try expect(later.timestamp >= earlier.timestamp, "position \(later.position) is older than \(earlier.position)")
            }
            let future = Date().addingTimeInterval(3_600)
            _ = try await log.appendImported([(event(), future)], to: "imported", expectedVersion: .any, claims: [], releases: [])
            let last = try await log.record(at: try await log.lastPosition())
            try expect(abs((last?.timestamp.timeIntervalSince1970 ?? 0) - future.timeIntervalSince1970) < 0.001, "an imported time is kept")
        }
    }

    func subscription() async throws {
        try await using("subscription") { log in
            for index in 0..<100 { try await append(log, "s\(index % 5)", .any) }
            let total = 600
            let reader = Task {
                var positions: [UInt64] = []
                for try await batch in log.subscribeBatches(after: 0, stream: nil, batchSize: 32) {
                    positions += batch.map(\.position)
                    if positions.count >= total { break }
                }
                return positions
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask { for _ in 0..<125 { try await append(log, "w\(writer)", .any) } }
                }
                try await group.waitForAll()
            }
            let seen = try await reader.value
            try expect(seen == Array(1...UInt64(total)), "every record exactly once, in order (got \(seen.count), first gap near \(firstGap(seen)))")
            // One stream's records only, from a position in the middle.
            var stream: [RecordedEvent] = []
            for try await record in log.subscribeRecords(after: 50, stream: "s1") {
                stream.append(record)
                if stream.count == 10 { break }
            }
            try expect(stream.allSatisfy { $0.streamID == "s1" && $0.position > 50 }, "a stream subscription keeps to its stream and start")
            try expect(stream.map(\.streamVersion) == Array(11...20), "stream versions 11…20 (got \(stream.map(\.streamVersion)))")
        }
    }

    func cancelledSubscription() async throws {
        try await using("cancel") { log in
            try await append(log, "s", .any)
            let started = Mutex(false)
            let reader = Task {
                var count = 0
                for try await _ in log.subscribeRecords(after: 0) {
                    count += 1
                    started.withLock { $0 = true }
                }
                return count
            }
            while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            reader.cancel()
            // A commit wakes a waiting subscription, which then sees the cancellation.
            try await append(log, "s", .any)
            let ended = try await withThrowingTaskGroup(of: Int?.self) { group in
                group.addTask { try await reader.value }
                group.addTask {
                    try await Task.sleep(for: .seconds(10))
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
            try expect(ended != nil, "a cancelled subscription ended within 10 s")
        }
    }

    func verifyFindsDamage() async throws {
        guard let tamper else { throw Mismatch(description: "the backend's test gave no way to change a stored record") }
        let log = try await open("verify")
        for index in 0..<30 { try await append(log, "s\(index % 4)", .any) }
        let intact = try await log.verify(batchSize: 8, progress: nil)
        try expect(intact.isIntact && intact.recordsChecked == 30, "an untouched log verifies")
        await log.close()
        try await tamper("verify", 17)
        try await using("verify") { log in
            let report = try await log.verify(batchSize: 8, progress: nil)
            try expect(report.problem?.position == 17, "verify reports the changed record at 17 (got \(String(describing: report.problem)))")
        }
    }

    func reopen() async throws {
        let log = try await open("reopen")
        for index in 0..<40 {
            _ = try await log.append([event()], to: "s\(index % 4)", expectedVersion: .any, claims: index == 0 ? ["held"] : [], releases: [])
        }
        _ = try await log.setMetadataIfAbsent("conformance", [1, 2, 3])
        let before = try await readAll(log)
        let head = try await log.verify(batchSize: 16, progress: nil).headHash
        await log.close()
        try await using("reopen") { log in
            try expect(try await readAll(log) == before, "the same records after reopening")
            try expect(try await log.verify(batchSize: 16, progress: nil).headHash == head, "the same head hash")
            try expect(try await log.claimOwner("held") == "s0", "claims survive")
            try expect(try await log.metadata("conformance") == [1, 2, 3], "metadata survives")
            try expect(try await log.setMetadataIfAbsent("conformance", [9]) == [1, 2, 3], "metadata is set once")
            try await append(log, "s0", .exact(10))
            try expect(try await log.lastPosition() == 41, "appends go on after reopening")
        }
    }

    func limits() async throws {
        try await using("limits") { log in
            for streamID in ["", String(repeating: "x", count: 401), "nul\u{0}inside"] {
                do {
                    try await append(log, streamID, .any)
                    throw Mismatch(description: "stream id of \(streamID.utf8.count) bytes was accepted")
                } catch EventLogError.invalidStreamID {}
            }
            for (events, label) in [
                ([ProposedEvent](), "no events"), ([ProposedEvent(type: String(repeating: "t", count: 300), payload: Data())], "a 300-byte type"),
                ([ProposedEvent(type: "", payload: Data())], "an empty type")
            ] {
                do {
                    _ = try await log.append(events, to: "s", expectedVersion: .any, claims: [], releases: [])
                    throw Mismatch(description: "\(label) was accepted")
                } catch EventLogError.invalidEvent {}
            }
            let twice = event()
            do {
                _ = try await log.append([twice, twice], to: "s", expectedVersion: .any, claims: [], releases: [])
                throw Mismatch(description: "one event id twice in a batch was accepted")
            } catch EventLogError.invalidEvent {}
            do {
                _ = try await log.append([event()], to: "s", expectedVersion: .any, claims: [""], releases: [])
                throw Mismatch(description: "an empty claim was accepted")
            } catch EventLogError.invalidEvent {}
            try expect(try await log.lastPosition() == 0, "nothing refused was written")
        }
    }

    func closedLog() async throws {
        let log = try await open("closed")
        try await append(log, "s", .any)
        await log.close()
        await log.close()
        do {
            try await append(log, "s", .any)
            throw Mismatch(description: "a closed log accepted an append")
        } catch EventLogError.closed {}
        do {
            _ = try await log.lastPosition()
            throw Mismatch(description: "a closed log answered a read")
        } catch EventLogError.closed {}
    }

    func batchAppends() async throws {
        try await using("batch") { log in
            try await append(log, "b", .any)
            let imported = Date(timeIntervalSince1970: 2_000_000_000)
            let outcomes = await log.appendBatch([
                StreamAppend(streamID: "a", events: [event(), event()], expectedVersion: .noStream, claims: ["batch-key"]),
                StreamAppend(streamID: "b", events: [event()], expectedVersion: .noStream),
                StreamAppend(streamID: "c", events: [event()], timestamps: [imported], expectedVersion: .noStream, claims: ["batch-key"]),
                StreamAppend(streamID: "b", events: [event()], expectedVersion: .exact(1))
            ])
            try expect(outcomes.count == 4, "one outcome per append")
            try expect((try? outcomes[0].get())?.positions == 2...3, "the first lands at 2…3")
            guard case .failure(EventLogError.wrongExpectedVersion) = outcomes[1] else {
                throw Mismatch(description: "a wrong expected version in a batch: \(outcomes[1])")
            }
            guard case .failure(EventLogError.claimTaken) = outcomes[2] else {
                throw Mismatch(description: "a claim taken earlier in the same batch: \(outcomes[2])")
            }
            try expect((try? outcomes[3].get())?.positions == 4...4, "the refused ones held back nothing: the last lands at 4")
            try expect(try await log.lastPosition() == 4, "the refused appends wrote nothing")
            try expect(try await log.streamVersion("c") == nil, "no stream c")
        }
    }

    // MARK: Helpers

    /// Opens the named log, runs `body` with it, and closes it whatever happens.
    func using<T>(_ name: String, _ body: (any EventLogBackend) async throws -> T) async throws -> T {
        let log = try await open(name)
        do {
            let result = try await body(log)
            await log.close()
            return result
        } catch {
            await log.close()
            throw error
        }
    }

    func event() -> ProposedEvent {
        ProposedEvent(type: "conformance.event", metadata: EventMetadata(actor: "kit"), payload: Data("{\"n\":1}".utf8))
    }

    func append(_ log: any EventLogBackend, _ streamID: String, _ expected: ExpectedVersion) async throws {
        _ = try await log.append([event()], to: streamID, expectedVersion: expected, claims: [], releases: [])
    }

    func readAll(_ log: any EventLogBackend) async throws -> [RecordedEvent] {
        var records: [RecordedEvent] = []
        while true {
            let batch = try await log.read(from: UInt64(records.count) + 1, direction: .forward, limit: 100)
            if batch.isEmpty { return records }
            records += batch
        }
    }

    func expect(_ condition: Bool, _ what: String) throws {
        if !condition { throw Mismatch(description: what) }
    }

    func expectError(_ expected: EventLogError, _ what: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as EventLogError {
            if error == expected { return }
            throw Mismatch(description: "\(what): \(error), expected \(expected)")
        }
        throw Mismatch(description: "\(what) succeeded, expected \(expected)")
    }

    func firstGap(_ positions: [UInt64]) -> UInt64 {
        zip(positions, 1...).first { $0.0 != UInt64($0.1) }.map { UInt64($0.1) } ?? UInt64(positions.count + 1)
    }
}
