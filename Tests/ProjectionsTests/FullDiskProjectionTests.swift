//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import Projections
import TestSupport
import TestTiers
import Testing

/// A projection that stores a 48 KiB value per record: a small disk fills after a few records.
struct BulkyProjection: Projection {
    var name: String { "bulky" }
    var fingerprint: String { "bulky-v1" }
    var databaseNames: [String] { ["values"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        try state.put("values", key: BigEndian.bytes(record.position), value: [UInt8](repeating: 0x5A, count: 48 * 1_024))
    }
}

/// The projections on a real full disk (a tmpfs mounted for the test; root, as in CI): the
/// storage failure comes from the file system, not from a thrown test error.
@Suite("Projections on a full disk", .serialized, .timeLimit(.minutes(3)), .integration)
struct FullDiskProjectionTests {
    private static func run(_ arguments: String...) -> Bool {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test(
        "a full disk under the projections: ENOSPC shows as the storage error, waits time out with it, and the runner goes on once space is freed",
        .enabled("needs root to mount a tmpfs") { geteuid() == 0 })
    func fullDisk() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        try FileManager.default.createDirectory(atPath: fixture.projectionsPath, withIntermediateDirectories: true)
        try #require(try await offThePool { Self.run("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", fixture.projectionsPath) })
        defer { _ = Self.run("umount", "-l", fixture.projectionsPath) }

        var options = ProjectionStoreOptions()
        options.readYourWritesTimeout = .milliseconds(500)
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [BulkyProjection()], options: options)
        try await store.waitUntilApplied("bulky", position: 0)
        // Fill the disk, leaving room for a few records' values only.
        let filler = fixture.projectionsPath + "/filler"
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let chunk = [UInt8](repeating: 0xAB, count: 16 << 10)
        var written = 0
        while chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 { written += chunk.count }
        close(descriptor)
        #expect(truncate(filler, off_t(max(0, written - (64 << 10)))) == 0)

        var last: UInt64 = 0
        for index in 0..<40 { last = try await log.append(ProposedEvent(type: "t", payload: Data("\(index)".utf8)), to: "s").positions.upperBound }
        // The runner meets the full disk: the status names the file system's error.
        let deadline = ContinuousClock.now + .seconds(20)
        var status = try #require(try await store.status().first)
        while status.storageError == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            status = try #require(try await store.status().first)
        }
        let error = try #require(status.storageError, "the projections never met the full disk")
        #expect(error.contains("No space left on device") || error.contains("MDB_MAP_FULL") || error.contains("full"), "\(error)")
        #expect(status.checkpoint < last)
        do {
            try await store.waitUntilApplied("bulky", position: last)
            Issue.record("the wait returned although the disk is full")
        } catch let ProjectionError.timedOut(projection, position, lastError) {
            #expect(projection == "bulky" && position == last && lastError != nil)
        }

        // Space freed: the runner retries on its own and applies everything.
        try FileManager.default.removeItem(atPath: filler)
        let healing = ContinuousClock.now + .seconds(30)
        while try await store.status().first?.checkpoint != last, ContinuousClock.now < healing {
            try await Task.sleep(for: .milliseconds(50))
        }
        let healed = try #require(try await store.status().first)
        #expect(healed.checkpoint == last && healed.storageError == nil, "\(healed)")
        await store.close()
    }
}
