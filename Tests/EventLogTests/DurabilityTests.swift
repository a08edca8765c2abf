//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import Testing

@Suite("Opening, reopening and growing")
struct DurabilityTests {
    @Test("a reopened log has every record, and appends continue the chain")
    func reopen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        var log = try EventLog(path: path)
        _ = try await log.append([event("a"), event("b")], to: "s")
        let logID = log.logID
        await log.close()
        log = try EventLog(path: path)
        defer { log.close() }
        #expect(log.logID == logID)
        await #expect(try log.read().map(\.type) == ["a", "b"])
        let result = try await log.append(event("c"), to: "s", expectedVersion: .exact(2))
        #expect(result.positions == 3...3)
        await #expect(try log.verify().isIntact)
    }

    @Test("a full map grows by itself: MDB_MAP_FULL never reaches the caller")
    func mapGrowth() async throws {
        var options = relaxed
        options.initialMapSize = 128 << 10
        try await withTemporaryLog(options: options) { (log: EventLog, _: TemporaryDirectory) async throws in
            let before = try log.statistics().mapBytes
            let payload = String(repeating: "x", count: 1_000)
            for batch in 0..<40 {
                _ = try await log.append((0..<50).map { _ in event("e", payload) }, to: "s\(batch)")
            }
            let stats = try log.statistics()
            #expect(stats.records == 2_000)
            #expect(stats.mapBytes > before)
            await #expect(try log.verify().isIntact)
        }
    }

    @Test("a log of an unknown format version is refused with a clear error")
    func unknownFormatVersion() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path)
        _ = try await log.append(event(), to: "s")
        await log.close()
        do {
            let environment = try Environment(path: path)
            let meta = try environment.openDatabase("meta")
            try environment.write { txn in try txn.put(meta, key: Array("format-version".utf8), value: [0, 0, 0, 99]) }
            environment.close()
        }
        #expect(throws: EventLogError.unsupportedFormatVersion(found: 99, supported: 2, path: URL(fileURLWithPath: path).standardizedFileURL.path)) {
            try EventLog(path: path)
        }
    }

    @Test("garbage, a zero-filled or a truncated data file, and foreign LMDB files are refused")
    func notALog() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        // Garbage and zeros.
        for (name, bytes) in [("garbage", Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })), ("zeros", Data(count: 65_536))] {
            let path = directory.path(name)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try bytes.write(to: URL(fileURLWithPath: path + "/data.mdb"))
            #expect(throws: EventLogError.self) { try EventLog(path: path) }
            do {
                _ = try EventLog(path: path)
            } catch let error as EventLogError {
                guard case .notAnEventLog = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
            }
        }
        // Truncated: a real log cut to a third of its size.
        let truncated = directory.path("truncated")
        do {
            let log = try EventLog(path: truncated, options: relaxed)
            for index in 0..<300 { _ = try await log.append(event("e", String(repeating: "\(index)", count: 200)), to: "s\(index)") }
            await log.close()
            let file = truncated + "/data.mdb"
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber).intValue
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            try handle.truncate(atOffset: UInt64(size / 3))
            try handle.close()
        }
        #expect {
            try EventLog(path: truncated)
        } throws: { error in
            guard case let .notAnEventLog(_, reason) = error as? EventLogError else { return false }
            return reason.contains("truncated")
        }
        // An LMDB environment that holds other databases.
        let foreign = directory.path("foreign")
        do {
            let environment = try Environment(path: foreign)
            let other = try environment.openDatabase("something-else")
            try environment.write { txn in try txn.put(other, key: [1], value: [2]) }
            environment.close()
        }
        #expect {
            try EventLog(path: foreign)
        } throws: { error in
            guard case let .notAnEventLog(_, reason) = error as? EventLogError else { return false }
            return reason.contains("something-else")
        }
        // Reading a log that does not exist.
        var readOnly = EventLogOptions()
        readOnly.readOnly = true
        #expect(throws: EventLogError.notAnEventLog(path: directory.path("missing"), reason: "there is no log there")) {
            try EventLog(path: directory.path("missing"), options: readOnly)
        }
    }

    @Test("a closed log answers with a typed error; opening one path twice in a process is refused")
    func closedAndTwice() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path)
        #expect {
            try EventLog(path: path)
        } throws: { error in
            "\(error)".contains("already open in this process")
        }
        await log.close()
        await log.close()
        let canonical = URL(fileURLWithPath: path).standardizedFileURL.path
        await #expect(throws: EventLogError.closed(path: canonical)) { try await log.append(event(), to: "s") }
        #expect(throws: EventLogError.closed(path: canonical)) { try log.read() }
        #expect(throws: EventLogError.closed(path: canonical)) { try log.verifyBlocking() }
        await #expect(throws: EventLogError.closed(path: canonical)) { try await log.verify() }
    }

    @Test("a read-only log reads but refuses appends")
    func readOnly() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let writer = try EventLog(path: path)
        _ = try await writer.append(event("a"), to: "s")
        await writer.close()
        var options = EventLogOptions()
        options.readOnly = true
        let reader = try EventLog(path: path, options: options)
        defer { reader.close() }
        await #expect(try reader.read().map(\.type) == ["a"])
        await #expect(throws: EventLogError.self) { try await reader.append(event(), to: "s") }
    }

    @Test("timestamps come from the injected clock and never go backwards")
    func clock() async throws {
        let times = [Date(timeIntervalSince1970: 1_000), Date(timeIntervalSince1970: 500), Date(timeIntervalSince1970: 2_000.000_001)]
        let index = ManagedIndex()
        var options = relaxed
        options.clock = { times[index.next() % times.count] }
        try await withTemporaryLog(options: options) { (log: EventLog, _: TemporaryDirectory) async throws in
            for _ in 0..<3 { _ = try await log.append(event(), to: "s") }
            let micros = try await log.read().map { Int64(($0.timestamp.timeIntervalSince1970 * 1_000_000).rounded()) }
            #expect(micros == [1_000_000_000, 1_000_000_000, 2_000_000_001])
        }
    }
}

final class ManagedIndex: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer {
            value += 1
            lock.unlock()
        }
        return value
    }
}
