//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import LogRecordFormat
import Synchronization
import TestSupport
import TestTiers
import Testing

@Suite("Integrity: checksums and the hash chain")
struct IntegrityTests {
    /// Builds a closed log of `count` records whose payloads are `marker-<position>` padded to 64 bytes,
    /// in one transaction, so that (LMDB being copy-on-write) no stale copy of a page holds a record.
    private func makeLog(at path: String, count: Int) async throws {
        var options = relaxed
        options.indexTailLimit = 0
        let log = try EventLog(path: path, options: options)
        let events = (1...count).map { position in
            event("t", "marker-\(String(format: "%05d", position))".padding(toLength: 64, withPad: ".", startingAt: 0))
        }
        _ = try await log.append(events, to: "stream")
        await log.close()
    }

    /// The byte range of record `position` in the data file (records are found by their unique payload).
    private func recordRange(in file: Data, position: Int) throws -> Range<Int> {
        let marker = Data("marker-\(String(format: "%05d", position))".utf8)
        let start = try #require(file.range(of: marker)).lowerBound
        #expect(file.range(of: marker, in: (start + 1)..<file.count) == nil, "the record is in the file once")
        // crc 4 + hash 32 + fixed 46 + "stream" (2+6) + "t" (2+1) + pair count 2 + payload length 4.
        let header = 4 + 32 + 46 + 8 + 3 + 2 + 4
        return (start - header)..<(start + 64)
    }

    @Test("an intact log verifies, reports its head hash and reports progress")
    func intact() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        try await makeLog(at: directory.path("log"), count: 50)
        let log = try EventLog(path: directory.path("log"))
        defer { log.close() }
        let seen = Mutex<[VerificationProgress]>([])
        let report = try await log.verify(batchSize: 16) { step in seen.withLock { $0.append(step) } }
        let progress = seen.withLock { $0 }
        #expect(report.isIntact)
        #expect(report.recordsChecked == 50)
        #expect(report.headHash == (try log.record(at: 50))?.hash)
        #expect(progress.last == VerificationProgress(checked: 50, total: 50))
        #expect(progress.count >= 4)
    }

    @Test(
        "flipping any single byte of a record is found by verify and by readers, at its position: every byte of 3 records and 400 random ones",
        .integration)
    func flippedBytes() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 30)
        let dataFile = URL(fileURLWithPath: path + "/data.mdb")
        let original = try Data(contentsOf: dataFile)
        var generator = SplitMix64(seed: 0xF11B_B17E)
        // Every byte of the first, a middle and the last record, then random bytes of random records.
        var flips: [(position: Int, offset: Int)] = []
        for position in [1, 15, 30] {
            flips += try recordRange(in: original, position: position).map { (position, $0) }
        }
        for _ in 0..<400 {
            let position = Int.random(in: 1...30, using: &generator)
            flips.append((position, Int.random(in: try recordRange(in: original, position: position), using: &generator)))
        }
        var detectedByVerify = 0
        var detectedByReaders = 0
        for (position, offset) in flips {
            var damaged = original
            damaged[offset] ^= UInt8.random(in: 1...255, using: &generator)
            try damaged.write(to: dataFile)
            let log = try EventLog(path: path)
            let report = try await log.verify()
            let context = "byte \(offset - (try recordRange(in: original, position: position)).lowerBound) of record \(position)"
            #expect(report.problem?.position == UInt64(position), "\(context)")
            #expect(report.problem?.kind == .corruptRecord)
            #expect(report.recordsChecked == UInt64(position - 1))
            if report.problem?.position == UInt64(position) { detectedByVerify += 1 }
            // A reader that meets the record throws, both in a scan and in a point read.
            var readerThrew = false
            #expect {
                try log.read(from: 1, limit: 100)
            } throws: { error in
                guard case let .corruptRecord(at, _, _) = error as? EventLogError else { return false }
                readerThrew = at == UInt64(position)
                return readerThrew
            }
            #expect(throws: EventLogError.self, "\(context)") { try log.record(at: UInt64(position)) }
            if readerThrew { detectedByReaders += 1 }
            await log.close()
        }
        print("byte flips: \(flips.count) flipped, \(detectedByVerify) found by verify, \(detectedByReaders) by readers")
        #expect(detectedByVerify == flips.count && detectedByReaders == flips.count)
        try original.write(to: dataFile)
        let log = try EventLog(path: path)
        defer { log.close() }
        await #expect(try log.verify().isIntact)
    }

    @Test("an edited hash with a recomputed checksum breaks the chain at that record")
    func editedHash() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 10)
        do {
            let environment = try Environment(path: path)
            let records = try environment.openDatabase("records")
            try environment.write { txn in
                let key = BigEndian.bytes(7)
                var value = try #require(try txn.get(records, key: key))
                value[10] ^= 0x01
                let crc = CRC32C.checksum(Array(value[4...]))
                withUnsafeBytes(of: crc.bigEndian) { value.replaceSubrange(0..<4, with: $0) }
                try txn.put(records, key: key, value: value)
            }
            environment.close()
        }
        let log = try EventLog(path: path)
        defer { log.close() }
        let report = try await log.verify()
        #expect(report.problem?.position == 7)
        #expect(report.problem?.kind == .hashMismatch)
        // The record itself still reads: its checksum matches. Only the chain shows the edit.
        #expect(try log.record(at: 7) != nil)
    }

    @Test("a removed record is a gap; a damaged index is an index mismatch")
    func gapsAndIndexes() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await makeLog(at: path, count: 10)
        do {
            let environment = try Environment(path: path)
            let records = try environment.openDatabase("records")
            try environment.write { txn in _ = try txn.delete(records, key: BigEndian.bytes(4)) }
            environment.close()
        }
        do {
            let log = try EventLog(path: path)
            let report = try await log.verify()
            #expect(report.problem == IntegrityProblem(position: 4, kind: .positionGap, detail: "position 4 is missing; the next record is at 5"))
            await log.close()
        }
        let second = directory.path("second")
        try await makeLog(at: second, count: 5)
        do {
            let environment = try Environment(path: second)
            let ids = try environment.openDatabase("event-ids")
            try environment.write { txn in
                try txn.withCursor(ids) { cursor in
                    let entry = try #require(try cursor.first())
                    let key = Array(entry.key)
                    _ = try txn.delete(ids, key: key)
                }
            }
            environment.close()
        }
        let log = try EventLog(path: second)
        defer { log.close() }
        await #expect(try log.verify().problem?.kind == .indexMismatch)
    }

    @Test("CRC-32C matches its check value, and the hardware and table paths agree")
    func crc() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        #expect(CRC32C.checksum((0...255).map { UInt8($0) }) == 0x9C44_184B)
        var generator = SplitMix64(seed: 7)
        // Around the three-chain blocks of the hardware path (3 × 128 and 3 × 2,048 bytes) as well.
        for length in [
            0, 1, 7, 8, 9, 63, 64, 65, 191, 192, 193, 200, 383, 384, 385, 450, 577, 767, 768, 769, 1_000, 4_099, 6_143, 6_144, 6_145, 6_535, 12_672,
            20_000
        ] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            #expect(CRC32C.checksum(bytes) == CRC32C.portableChecksum(bytes), "length \(length)")
        }
        // Every length up to 1,200 bytes.
        let long = (0..<1_203).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let mismatches = (0...1_200).filter { length in
            let slice = Array(long[3..<(3 + length)])
            return CRC32C.checksum(slice) != CRC32C.portableChecksum(slice)
        }
        #expect(mismatches.isEmpty, "lengths \(mismatches.prefix(10))")
    }
}
