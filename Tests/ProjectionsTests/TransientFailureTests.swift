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

/// A backend a projection reads through (a key vault on a database server) that is unreachable
/// while `down` is set: its error says it is transient, or not.
struct UnreachableBackend: Projection {
    struct Unreachable: TransientFailure, CustomStringConvertible {
        let isTransient: Bool
        var description: String { isTransient ? "the key vault is unreachable (connection refused)" : "the key vault is damaged" }
    }

    final class Switch: Sendable {
        let down = Mutex(true)
        let calls = Mutex(0)
    }
    let backend = Switch()
    let transient: Bool
    var name: String { "unreachable-backend" }
    var fingerprint: String { "unreachable-backend-v1" }
    var databaseNames: [String] { ["seen"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        backend.calls.withLock { $0 += 1 }
        if backend.down.withLock({ $0 }) { throw Unreachable(isTransient: transient) }
        try state.put("seen", key: BigEndian.bytes(record.position), value: [])
    }
}

@Suite("A projection whose backend is briefly unreachable is retried, not stopped")
struct TransientFailureTests {
    @Test("a transient failure in apply: retried with backoff, shown in status() with its start, the projection goes on once it heals")
    func transientIsRetried() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let projection = UnreachableBackend(transient: true)
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [projection])
        _ = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s")
        let deadline = ContinuousClock.now + .seconds(90)
        while projection.backend.calls.withLock({ $0 }) < 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let failing = try #require(try await store.status().first)
        // Retried (three tries at least), never a projection failure.
        #expect(projection.backend.calls.withLock { $0 } >= 3)
        #expect(failing.failure == nil)
        #expect(failing.storageError?.contains("unreachable") == true, "\(String(describing: failing.storageError))")
        #expect(failing.storageErrorSince != nil && failing.checkpoint == 0)

        projection.backend.down.withLock { $0 = false }
        let healing = ContinuousClock.now + .seconds(90)
        while try await store.status().first?.checkpoint != 1, ContinuousClock.now < healing {
            try await Task.sleep(for: .milliseconds(20))
        }
        let healed = try #require(try await store.status().first)
        #expect(healed.checkpoint == 1 && healed.storageError == nil && healed.storageErrorSince == nil && healed.failure == nil)
        await store.close()
    }

    @Test("the same error saying it is not transient stops the projection at its record")
    func permanentStops() async throws {
        let fixture = Fixture()
        defer { fixture.cleanup() }
        let log = try fixture.openLog()
        defer { log.close() }
        let projection = UnreachableBackend(transient: false)
        let store = try ProjectionStore(path: fixture.projectionsPath, log: log, projections: [projection])
        _ = try await log.append(ProposedEvent(type: "t", payload: Data()), to: "s")
        await #expect(throws: ProjectionError.self) {
            try await store.waitUntilApplied("unreachable-backend", position: 1)
        }
        let stopped = try #require(try await store.status().first)
        #expect(stopped.failure?.contains("stopped at position 1") == true, "\(String(describing: stopped.failure))")
        #expect(projection.backend.calls.withLock { $0 } == 1)
        await store.close()
    }
}
