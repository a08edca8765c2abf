//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import Projections
import Synchronization
import Testing

/// A projection whose storage fails (an LMDB error, as a full or broken disk gives) while `broken` is set.
struct FailingStorage: Projection {
    final class Switch: Sendable {
        let isOn = Mutex(true)
    }
    let broken = Switch()
    var name: String { "failing-storage" }
    var fingerprint: String { "failing-storage-v1" }
    var databaseNames: [String] { ["seen"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        if broken.isOn.withLock({ $0 }) { throw LMDBError(code: EIO, operation: "write the test page", path: "/test/projections") }
        try state.put("seen", key: BigEndian.bytes(record.position), value: [])
    }
}

@Suite("A runner that cannot write is never silent and never makes a command hang")
struct StorageFailureTests {
    @Test("the storage error shows in status(), a read-your-writes wait times out with a typed error, and the runner recovers")
    func storageErrorIsVisible() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let broken = FailingStorage()
        var options = ProjectionStoreOptions()
        options.readYourWritesTimeout = .milliseconds(300)
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [broken], options: options)
        let result = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s")
        // The runner meets the failure first (on a loaded machine that can take a while); then a
        // wait for the record times out with the failure attached.
        let deadline = ContinuousClock.now + .seconds(20)
        while try await store.status().first?.storageError == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        do {
            try await store.waitUntilApplied("failing-storage", position: result.positions.upperBound)
            Issue.record("the wait returned although nothing could be written")
        } catch let ProjectionError.timedOut(projection, position, lastError) {
            #expect(projection == "failing-storage" && position == 1)
            #expect(lastError?.contains("write the test page") == true, "\(String(describing: lastError))")
        }
        let status = try #require(try await store.status().first)
        #expect(status.storageError?.contains("Input/output error") == true, "\(String(describing: status.storageError))")
        #expect(status.checkpoint == 0)

        broken.broken.isOn.withLock { $0 = false }
        // The runner retries on its own; this store's waits are short, so wait for the checkpoint.
        let healing = ContinuousClock.now + .seconds(20)
        while try await store.status().first?.checkpoint != 1, ContinuousClock.now < healing {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await store.waitUntilApplied("failing-storage", position: 1)
        let healed = try #require(try await store.status().first)
        #expect(healed.storageError == nil && healed.checkpoint == 1)
        await store.close()
    }
}
