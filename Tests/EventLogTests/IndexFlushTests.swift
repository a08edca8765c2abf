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

/// The tail's flushes put their entries through one cursor per index: appended after the last
/// key where they can be, otherwise placed next to the entry put before them (or found from the
/// root when they belong on another page). These tests make indexes of many pages, so that most
/// flushed entries land in the middle of the tree, and check every entry afterwards.
@Suite("Index flushes into indexes of many pages")
struct IndexFlushTests {
    @Test("entries flushed in the middle of many-page indexes, with ids in and out of order, are all there and point at their records")
    func middleOfManyPages() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        var options = relaxed
        options.indexTailLimit = 50
        options.bulkIndexTailLimit = 50 * 32
        options.idleIndexFlushDelay = .seconds(3_600)
        let log = try EventLog(path: path, options: options)
        // 30 streams with ids of 160 bytes: the streams index holds about 20 entries per page, so
        // 360 entries take about 18 leaves and a branch page above them.
        let padding = String(repeating: "x", count: 150)
        let streams = (0..<30).map { "stream-\($0 < 10 ? "0" : "")\($0)-\(padding)" }
        #expect(360 * (streams[0].utf8.count + 9) > 12 * 4_096)
        var generator = SplitMix64(seed: 0x1D_F1A5)
        var expected: [String: [UUID]] = [:]
        var appended = 0
        for round in 0..<12 {
            for stream in streams.shuffled(using: &generator) {
                // Every other event has a time-ordered id (appended at the end of the event-id
                // index), the others a random one (put in its middle).
                let id = appended.isMultiple(of: 2) ? UUID.timeOrdered() : UUID()
                let version = UInt64(expected[stream, default: []].count)
                _ = try await log.append(event(id: id), to: stream, expectedVersion: version == 0 ? .noStream : .exact(version))
                expected[stream, default: []].append(id)
                appended += 1
            }
            #expect(try log.indexedThrough() == UInt64((appended / 50) * 50), "round \(round)")
        }
        #expect(try log.indexedThrough() == 350)
        await log.close()

        // Closing wrote the last ten; now every record is in both indexes, in key order.
        let reopened = try EventLog(path: path, options: options)
        #expect(try reopened.indexedThrough() == 360)
        var positions: [UUID: UInt64] = [:]
        for (stream, ids) in expected {
            let records = try await reopened.readStream(stream)
            #expect(records.map(\.eventID) == ids, "\(stream.prefix(9))")
            #expect(records.map(\.streamVersion) == Array(1...12))
            for record in records {
                #expect(try reopened.position(ofEvent: record.eventID) == record.position)
                positions[record.eventID] = record.position
            }
        }
        #expect(positions.count == 360)
        #expect(try await reopened.verify(batchSize: 64).problem == nil)
        await reopened.close()

        let environment = try Environment(path: path)
        defer { environment.close() }
        let streamIndex = try environment.openDatabase("streams")
        let idIndex = try environment.openDatabase("event-ids")
        try environment.read { txn in
            let streamEntries = try indexEntries(txn, streamIndex)
            let wanted: [(key: [UInt8], position: UInt64)] = expected.keys.sorted().flatMap { stream in
                expected[stream]!.enumerated().map { version, id in
                    (key: Array(stream.utf8) + [0] + BigEndian.bytes(UInt64(version + 1)), position: positions[id]!)
                }
            }
            #expect(streamEntries.map(\.key) == wanted.map(\.key))
            #expect(streamEntries.map(\.position) == wanted.map(\.position))
            let idEntries = try indexEntries(txn, idIndex)
            #expect(idEntries.count == 360)
            for entry in idEntries {
                let id = entry.key.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
                #expect(positions[id] == entry.position)
            }
        }
    }
}
