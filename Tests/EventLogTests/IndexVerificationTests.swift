//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import Synchronization
import TestSupport
import Testing

/// Verification compares the indexes with the records as two sets (a digest of each, read in
/// key order on a thread of its own); these tests damage the indexes in the ways that keep entry
/// counts equal, or not, and check that the first wrong record is still named.
@Suite("Integrity: the indexes against the records")
struct IndexVerificationTests {
    /// A closed log of `count` records, one stream per three records, every entry indexed.
    private func makeLog(at path: String, count: Int) async throws {
        try await makeIndexedLog(at: path, count: count) { "stream-\(($0 - 1) / 3)" }
    }

    /// Changes the log's raw LMDB databases, then verifies the log.
    private func verifyAfter(path: String, _ change: (Transaction, Database, Database) throws -> Void) async throws -> VerificationReport {
        let environment = try Environment(path: path)
        let streams = try environment.openDatabase("streams")
        let ids = try environment.openDatabase("event-ids")
        try environment.write { txn in try change(txn, streams, ids) }
        environment.close()
        let log = try EventLog(path: path)
        defer { log.close() }
        return try await log.verify(batchSize: 4)
    }

    @Test("an intact log with an unindexed tail verifies; its records are counted once")
    func intactWithTail() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        var options = relaxed
        options.indexTailLimit = 16
        let log = try EventLog(path: directory.path("log"), options: options)
        defer { log.close() }
        for position in 1...50 { _ = try await log.append(event("t", "record \(position)"), to: "stream-\(position % 7)") }
        let report = try await log.verify(batchSize: 8)
        #expect(report.problem == nil)
        #expect(report.recordsChecked == 50)
        #expect(report.headHash == (try log.record(at: 50))?.hash)
    }

    @Test("two stream-index entries whose positions were swapped: the first of the two records is named")
    func swappedPositions() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 12)
        let report = try await verifyAfter(path: path) { txn, streams, _ in
            let all = try indexEntries(txn, streams)
            let (first, second) = (try #require(all.first { $0.position == 5 }), try #require(all.first { $0.position == 9 }))
            try txn.put(streams, key: first.key, value: BigEndian.bytes(9))
            try txn.put(streams, key: second.key, value: BigEndian.bytes(5))
        }
        #expect(report.problem?.kind == .indexMismatch)
        #expect(report.problem?.position == 5)
        #expect(report.problem?.detail.contains("stream index") == true)
        #expect(report.recordsChecked == 12, "the records themselves are intact")
    }

    @Test("a missing event-id entry names its record")
    func missingEntry() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 12)
        let report = try await verifyAfter(path: path) { txn, _, ids in
            let victim = try #require(try indexEntries(txn, ids).first { $0.position == 8 })
            #expect(try txn.delete(ids, key: victim.key))
        }
        #expect(report.problem?.kind == .indexMismatch)
        #expect(report.problem?.position == 8)
        #expect(report.problem?.detail.contains("event-id index") == true)
    }

    @Test("an extra event-id entry that no record has is named with the position it points at")
    func extraEntry() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 12)
        let report = try await verifyAfter(path: path) { txn, _, ids in
            try txn.put(ids, key: Array(repeating: 0xAB, count: 16), value: BigEndian.bytes(3))
        }
        #expect(report.problem?.kind == .indexMismatch)
        #expect(report.problem?.position == 3)
        #expect(report.problem?.detail.contains("abababab") == true)
        #expect(report.problem?.detail.contains("not the one it names") == true)
    }

    @Test("a stream entry with a changed version, and a malformed key, are index mismatches")
    func changedAndMalformed() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 12)
        let changed = try await verifyAfter(path: path) { txn, streams, _ in
            let entry = try #require(try indexEntries(txn, streams).first { $0.position == 11 })
            #expect(try txn.delete(streams, key: entry.key))
            try txn.put(streams, key: Array(entry.key.dropLast(8)) + BigEndian.bytes(9), value: BigEndian.bytes(11))
        }
        #expect(changed.problem?.kind == .indexMismatch)
        #expect(changed.problem?.position == 11)

        let second = directory.path("second")
        try await makeLog(at: second, count: 6)
        let malformed = try await verifyAfter(path: second) { txn, _, ids in
            try txn.put(ids, key: Array(repeating: 1, count: 15), value: BigEndian.bytes(2))
        }
        #expect(malformed.problem?.kind == .indexMismatch)
        #expect(malformed.problem?.detail.contains("not 16") == true)
    }

    @Test("verifying while a writer appends and the indexes are brought up to date finds nothing wrong")
    func whileWriting() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        var options = relaxed
        options.indexTailLimit = 8
        let log = try EventLog(path: directory.path("log"), options: options)
        defer { log.close() }
        for position in 1...200 { _ = try await log.append(event("t", "record \(position)"), to: "stream-\(position % 13)") }
        // The writer starts once the first verification has checked its first batch; the
        // verifications go on until it is done, and those during which it appended are counted.
        let (start, starter) = AsyncStream.makeStream(of: Void.self)
        let appended = Atomic(0)
        let finished = Atomic(false)
        let writer = Task {
            for await _ in start { break }
            for position in 201...1_200 {
                _ = try await log.append(event("t", "record \(position)"), to: "stream-\(position % 13)")
                appended.add(1, ordering: .relaxed)
            }
            finished.store(true, ordering: .relaxed)
        }
        var reports: [VerificationReport] = []
        var overlapped = 0
        while !finished.load(ordering: .relaxed) && reports.count < 2_000 {
            let before = appended.load(ordering: .relaxed)
            reports.append(try await log.verify(batchSize: 16) { _ in starter.yield() })
            starter.yield()
            if appended.load(ordering: .relaxed) > before { overlapped += 1 }
        }
        try await writer.value
        #expect(overlapped >= 1, "no verification ran while the writer appended")
        reports.append(try await log.verify(batchSize: 16))
        for report in reports {
            #expect(report.problem == nil)
            #expect(report.recordsChecked >= 200)
        }
        #expect(reports.last?.recordsChecked == 1_200)
    }

    @Test("an awaited verification runs on a thread of its own, not on the caller's")
    func offThePool() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 6)
        let log = try EventLog(path: path)
        defer { log.close() }
        let names = Mutex<[String]>([])
        _ = try await log.verify(batchSize: 2) { _ in names.withLock { $0.append(currentThreadName()) } }
        let seen = names.withLock { $0 }
        #expect(seen.count >= 3)
        #expect(seen.allSatisfy { $0.hasPrefix("log verify ") }, "\(seen)")
    }
}

/// The calling thread's name as the kernel keeps it (at most 15 bytes).
private func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .newlines)
}
