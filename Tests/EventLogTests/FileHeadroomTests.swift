//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import LMDB
import Testing

/// The data file written ahead of LMDB's last page (`EnvironmentOptions.writesAhead`).
@Suite("Writing the data file ahead")
struct FileHeadroomTests {
    /// The bytes of `file` from `offset` to its end.
    private func tail(of file: String, from offset: Int) throws -> Data {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: file))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        return try handle.readToEnd() ?? Data()
    }

    /// Writes `commits` transactions of one 3 kB value each into `environment`; after each
    /// one, `check` gets the used size before it and the file's size.
    private func commitValues(_ environment: Environment, commits: Int, check: (Int, Int) throws -> Void) throws {
        let database = try environment.openDatabase("values")
        for index in 0..<commits {
            let usedBefore = environment.usedSize
            try environment.write { txn in
                try txn.put(database, key: Array("key-\(index)".utf8), value: [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 3_000))
            }
            try check(usedBefore, environment.fileSize)
        }
    }

    @Test("a flushing environment keeps zeros written past its last page; its values survive a reopen")
    func durableWritesAhead() throws {
        let directory = TemporaryDirectory("headroom")
        defer { directory.cleanup() }
        let path = directory.path("env")
        var sizes: Set<Int> = []
        do {
            let environment = try Environment(path: path)
            defer { environment.close() }
            try commitValues(environment, commits: 600) { usedBefore, fileSize in
                // Extended at the start of the transaction whenever less than half the target was left.
                #expect(fileSize >= usedBefore + 512 << 10, "file \(fileSize), used \(usedBefore) before the commit")
                sizes.insert(fileSize)
            }
            let used = environment.usedSize
            let fileSize = environment.fileSize
            #expect(used > 2 << 20, "the values outgrew the first extension (\(used) bytes used)")
            #expect(fileSize > used)
            #expect(fileSize <= used + 1 << 20 + 4096, "no more than the target ahead (\(fileSize) for \(used))")
            // What is ahead is zeros, never a page.
            let ahead = try tail(of: path + "/data.mdb", from: used)
            #expect(ahead.count == fileSize - used)
            #expect(ahead.allSatisfy { $0 == 0 })
        }
        // One extension per half megabyte or more, not one per commit: the file took few sizes.
        #expect(sizes.count >= 2 && sizes.count <= 8, "\(sizes.count) file sizes over 600 commits")

        let reopened = try Environment(path: path)
        defer { reopened.close() }
        let database = try reopened.openDatabase("values")
        try reopened.read { txn in
            for index in [0, 299, 599] {
                let value = try #require(try txn.get(database, key: Array("key-\(index)".utf8)))
                #expect(value == [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 3_000))
            }
        }
    }

    @Test("relaxed environments, and those opened with writesAhead off, end at their last page", arguments: [true, false])
    func noHeadroom(relaxed: Bool) throws {
        let directory = TemporaryDirectory("headroom")
        defer { directory.cleanup() }
        var options = EnvironmentOptions()
        if relaxed { options.sync = .relaxed } else { options.writesAhead = false }
        let environment = try Environment(path: directory.path("env"), options: options)
        defer { environment.close() }
        try commitValues(environment, commits: 50) { _, _ in }
        #expect(environment.usedSize > 150_000)
        #expect(environment.fileSize == environment.usedSize)
    }

    @Test("a durable log's appends land in the written-ahead part of its file")
    func logWritesAhead() async throws {
        let directory = TemporaryDirectory("headroom")
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path)
        let payload = String(repeating: "p", count: 500)
        for batch in 0..<20 {
            _ = try await log.append((0..<10).map { _ in event("e", payload) }, to: "s\(batch)")
        }
        let statistics = try log.statistics()
        await log.close()
        let environment = try Environment(path: path)
        defer { environment.close() }
        #expect(statistics.records == 200)
        #expect(statistics.fileBytes >= environment.usedSize + 512 << 10, "\(statistics.fileBytes) bytes for \(environment.usedSize) used")
    }

    @Test("three writer processes killed mid-work: their extensions never cover a page, and every acknowledged append survives")
    func processesWriteAhead() async throws {
        let directory = TemporaryDirectory("headroom-processes")
        defer { directory.cleanup() }
        let path = directory.path("log")
        try await EventLog(path: path).close()
        let sizeAtCreation = try Environment(path: path, options: readOnlyEnvironment).fileSize
        // Rounds of three children, each killed mid-work, until the file has outgrown what
        // creation wrote: a slow machine needs more rounds to fill the first megabyte.
        var runs: [ChildRun] = []
        var rounds = 0
        let enough: @Sendable (ChildRun) -> Bool = { $0.acknowledged.count > 20 }
        while rounds < 12 {
            rounds += 1
            let base = 3 * rounds
            // 1.5 s from opening the log, and longer for a child that has not appended enough by then.
            async let first = ChildRun.run(path: path, run: base, writers: 3, environment: [:], milliseconds: 1_500, until: enough)
            async let second = ChildRun.run(path: path, run: base + 1, writers: 3, environment: [:], milliseconds: 1_500, until: enough)
            async let third = ChildRun.run(path: path, run: base + 2, writers: 3, environment: [:], milliseconds: 1_500, until: enough)
            let round = try await [first, second, third]
            #expect(round.allSatisfy { $0.killed })
            #expect(round.allSatisfy { $0.acknowledged.count > 20 }, "\(round.map(\.acknowledged.count))")
            runs += round
            if try Environment(path: path, options: readOnlyEnvironment).fileSize > sizeAtCreation { break }
        }

        let environment = try Environment(path: path, options: readOnlyEnvironment)
        let used = environment.usedSize
        let fileSize = environment.fileSize
        environment.close()
        print(
            "headroom, 3 processes, \(rounds) rounds: \(runs.map(\.acknowledged.count)) appends, \(used) bytes used, file \(sizeAtCreation) -> \(fileSize)"
        )
        // The children extended the file while the others wrote (it outgrew what creation wrote).
        #expect(fileSize > sizeAtCreation, "\(fileSize) bytes, \(sizeAtCreation) at creation, \(used) used")
        #expect(fileSize >= used)
        let ahead = try tail(of: path + "/data.mdb", from: used)
        #expect(ahead.count == fileSize - used)
        // Past the last committed page: zeros, or whole pages that a killed child's transaction
        // wrote before it could commit (each one headed with its own page number, or inside an
        // overflow run that is). Anything else would be a page an extension moved or tore.
        // The same reading over the committed pages finds each one LMDB's (so it can tell).
        let committed = strayPages(try tail(of: path + "/data.mdb", from: 0).prefix(used), firstPage: 0)
        #expect(
            committed.strays.isEmpty && committed.nonZero > used / pageSize / 2, "\(committed.nonZero) pages, strays \(committed.strays.prefix(8))")
        let (strays, written) = strayPages(ahead, firstPage: used / pageSize)
        print("headroom: \(written) pages past the last committed one were written by transactions that did not commit")
        #expect(strays.isEmpty, "pages past the last committed one that LMDB did not write: \(strays.prefix(8))")
        let log = try EventLog(path: path)
        defer { log.close() }
        #expect(try await log.verify().isIntact)
        for ack in runs.flatMap(\.acknowledged) {
            #expect(try log.record(at: ack.position)?.eventID == ack.eventID)
        }
    }

    private let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The page numbers, from `firstPage` on, of the non-zero pages in `bytes` that are neither
    /// headed by their own page number nor covered by an overflow page that is; and how many
    /// non-zero pages are.
    private func strayPages(_ bytes: Data, firstPage: Int) -> (strays: [Int], nonZero: Int) {
        bytes.withUnsafeBytes { file in
            var strays: [Int] = []
            var overflowEnd = firstPage
            var nonZero = 0
            for index in 0..<file.count / pageSize {
                let number = firstPage + index
                let start = index * pageSize
                if file[start..<start + pageSize].allSatisfy({ $0 == 0 }) { continue }
                nonZero += 1
                if number < overflowEnd { continue }
                // LMDB's page header, little-endian: page number (8 bytes), pad (2), flags (2),
                // and for an overflow page (P_OVERFLOW, 0x04) its page count (4).
                let pageNumber = UInt64(littleEndian: file.loadUnaligned(fromByteOffset: start, as: UInt64.self))
                let flags = UInt16(littleEndian: file.loadUnaligned(fromByteOffset: start + 10, as: UInt16.self))
                guard pageNumber == UInt64(number) else {
                    strays.append(number)
                    continue
                }
                if flags & 0x04 != 0 {
                    let pages = UInt32(littleEndian: file.loadUnaligned(fromByteOffset: start + 12, as: UInt32.self))
                    overflowEnd = number + max(Int(pages), 1)
                }
            }
            return (strays, nonZero)
        }
    }

    private var readOnlyEnvironment: EnvironmentOptions {
        var options = EnvironmentOptions()
        options.readOnly = true
        return options
    }
}
