//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import TestSupport
import TestTiers
import Testing

/// A real full disk: a 4 MiB tmpfs, mounted for the test (needs root, as in CI here).
@Suite("A full disk", .timeLimit(.minutes(3)), .integration)
struct FullDiskTests {
    /// Whether this process may mount a tmpfs; checked once by trying.
    static let mountable: Bool = {
        guard geteuid() == 0 else { return false }
        let probe = TemporaryDirectory("tmpfs-probe")
        defer { probe.cleanup() }
        guard run("/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe.path) else { return false }
        return run("/bin/umount", probe.path)
    }()

    @discardableResult
    static func run(_ tool: String, _ arguments: String...) -> Bool {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// Fills the file system at `path` with `filler` until a write fails; returns the bytes written.
    private func fill(_ filler: String) -> Int {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0xAB, count: 16 << 10)
        var total = 0
        while true {
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written <= 0 { return total }
            total += written
        }
    }

    @Test(
        "appends on a full disk fail with a clear error; the log stays intact and appends resume once space is freed",
        .enabled("needs root to mount a tmpfs") { try await offThePool { FullDiskTests.mountable } })
    func fullDisk() async throws {
        let mountPoint = TemporaryDirectory("tmpfs")
        defer { mountPoint.cleanup() }
        // mount and umount are waited for off the cooperative pool.
        try #require(try await offThePool { Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint.path) })
        let outcome: Result<Void, any Error>
        do {
            try await fillAndFree(mountPoint)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        _ = try await offThePool { Self.run("/bin/umount", mountPoint.path) }
        try outcome.get()
    }

    /// The test on the tmpfs mounted at `mountPoint`.
    private func fillAndFree(_ mountPoint: TemporaryDirectory) async throws {
        let path = mountPoint.path("log")
        let filler = mountPoint.path("filler")

        let log = try EventLog(path: path)
        // Leave about 200 KiB free, then append 1 KiB events until the disk is full.
        let filled = fill(filler)
        try #require(truncate(filler, off_t(max(0, filled - (200 << 10)))) == 0)
        let payload = Data(repeating: 0x5A, count: 1_024)
        var appended: [UInt64: UUID] = [:]
        var failure: (any Error)?
        for index in 0..<10_000 {
            let event = ProposedEvent(type: "disk.test", payload: payload)
            do {
                let result = try await log.append([event], to: "stream-\(index % 50)", expectedVersion: .any)
                appended[result.positions.lowerBound] = event.eventID
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "the disk never filled up")
        #expect(error is EventLogError)
        #expect("\(error)".contains("No space left on device"), "\(error)")
        #expect(appended.count > 20)
        print("full tmpfs: \(appended.count) appends, then: \(error)")

        // Nothing acknowledged is lost and the chain holds, both in this process and after reopening.
        #expect(try log.lastPosition() == UInt64(appended.count))
        await #expect(try log.verify().isIntact)
        // Still full: the next append fails the same way and changes nothing.
        await #expect(throws: EventLogError.self) {
            try await log.append([ProposedEvent(type: "disk.test", payload: payload)], to: "stream-0", expectedVersion: .any)
        }
        #expect(try log.lastPosition() == UInt64(appended.count))

        // Free the space: appends work again on the same open log.
        try FileManager.default.removeItem(atPath: filler)
        for index in 0..<100 {
            let event = ProposedEvent(type: "disk.test", payload: payload)
            let result = try await log.append([event], to: "stream-\(index % 50)", expectedVersion: .any)
            appended[result.positions.lowerBound] = event.eventID
        }
        await log.close()

        let reopened = try EventLog(path: path)
        defer { reopened.close() }
        for (position, id) in appended {
            #expect(try reopened.record(at: position)?.eventID == id)
        }
        let report = try await reopened.verify()
        #expect(report.isIntact)
        #expect(report.recordsChecked == UInt64(appended.count))
    }
}
