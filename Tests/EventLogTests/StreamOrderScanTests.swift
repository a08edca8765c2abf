//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import TestSupport
import Testing

/// `EventLog.scanStreams`: the log read stream by stream through its streams index, as a
/// stream-by-stream rebuild reads it.
@Suite("Reading the log stream by stream")
struct StreamOrderScanTests {
    /// A closed log whose records alternate between four streams (`s0`…`s3`), every one indexed:
    /// record `p` is version `(p - 1) / 4 + 1` of stream `s((p - 1) % 4)`.
    private func makeLog(at path: String, count: Int) async throws {
        try await makeIndexedLog(at: path, count: count) { "s\(($0 - 1) % 4)" }
    }

    /// The positions a scan gives, with each record's stream and version checked against them.
    private func scan(_ log: EventLog, after: String? = nil, through: UInt64, batchSize: Int) throws -> [UInt64] {
        var positions: [UInt64] = []
        try log.scanStreams(after: after.map { Array($0.utf8) }, through: through, batchSize: batchSize) { record in
            let position = record.position
            #expect(record.streamID == "s\((position - 1) % 4)")
            #expect(record.streamVersion == (position - 1) / 4 + 1)
            positions.append(position)
            return true
        }
        return positions
    }

    @Test("streams in the order of their ids, each in version order, across fresh read transactions; after a stream; through a position")
    func order() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 20)
        let log = try EventLog(path: path)
        defer { log.close() }
        #expect(try log.streamOrderLimit() == 20)
        let byStream: [UInt64] = [1, 5, 9, 13, 17, 2, 6, 10, 14, 18, 3, 7, 11, 15, 19, 4, 8, 12, 16, 20]
        // A batch of 2 ends each read transaction at the next stream boundary.
        for batchSize in [2, 4_096] {
            #expect(try scan(log, through: 20, batchSize: batchSize) == byStream)
        }
        #expect(try scan(log, after: "s1", through: 20, batchSize: 2) == Array(byStream.dropFirst(10)))
        #expect(try scan(log, through: 9, batchSize: 3) == byStream.filter { $0 <= 9 })
        var seen = 0
        try log.scanStreams(after: nil, through: 20) { _ in
            seen += 1
            return seen < 7
        }
        #expect(seen == 7, "false stops the scan at once")
    }

    @Test("a streams-index entry that points at no record stops the scan with that position named")
    func missingRecord() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 12)
        // Version 2 of s2 (position 7) is made to point at position 99, which no record has.
        let environment = try Environment(path: path)
        let streams = try environment.openDatabase("streams")
        try environment.write { txn in
            let victim = try #require(try indexEntries(txn, streams).first { $0.position == 7 })
            try txn.put(streams, key: victim.key, value: BigEndian.bytes(99))
        }
        environment.close()
        let log = try EventLog(path: path)
        defer { log.close() }
        var read: [UInt64] = []
        do {
            try log.scanStreams(after: nil, through: 100) { record in
                read.append(record.position)
                return true
            }
            Issue.record("the scan ended without an error")
        } catch let EventLogError.corruptRecord(position, reason, _) {
            #expect(position == 99)
            #expect(reason.contains("missing record"))
        }
        // s0 and s1 whole, then s2's first record: the scan stopped at the broken entry.
        #expect(read == [1, 5, 9, 2, 6, 10, 3])
    }
}
