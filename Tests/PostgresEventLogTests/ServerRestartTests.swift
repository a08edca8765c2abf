//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import PostgresEventLog
import Synchronization
import TestSupport
import TestTiers
import Testing

/// A value several tasks share.
final class Shared<Value: Sendable>: Sendable {
    let state: Mutex<Value>
    init(_ value: Value) { state = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { state.withLock { body(&$0) } }
}

/// What the writers of the restart test saw.
struct RestartTally: Sendable {
    var acknowledged: [(id: UUID, position: UInt64)] = []
    var failures: [String] = []
    var successesAfterFailure = 0
}

@Suite("The PostgreSQL server crashes and restarts under a workload", .timeLimit(.minutes(5)), .integration)
struct ServerRestartTests {
    @Test(
        "pg_ctl stop -m immediate mid-workload: appends fail with a clear error while it is down and succeed after; nothing acknowledged is lost; a subscription resumes without gap or repeat"
    )
    func crashAndRestart() async throws {
        let server = try await PostgresServer.start(name: "restart")
        defer { server.remove() }
        var options = PostgresLogOptions()
        options.operationTimeout = .seconds(2)
        options.pollInterval = .milliseconds(50)
        let log = try await PostgresEventLog.open(server.url(schema: "restart"), options: options)

        let seen = Shared<[UInt64]>([])
        let subscriber = Task {
            do {
                for try await record in log.subscribeRecords(after: 0, stream: nil, batchSize: 32) {
                    seen.withLock { $0.append(record.position) }
                }
            } catch {
                Issue.record("the subscription ended with \(error)")
            }
        }
        let tally = Shared(RestartTally())
        let writing = Shared(true)
        let writers = (0..<4).map { writer in
            Task {
                var step = 0
                while writing.withLock({ $0 }) {
                    step += 1
                    let event = ProposedEvent(type: "restart.step", payload: Data("\(writer)-\(step)".utf8))
                    do {
                        let result = try await log.append([event], to: "w\(writer)", expectedVersion: .any, claims: [], releases: [])
                        tally.withLock { tally in
                            tally.acknowledged.append((event.eventID, result.positions.lowerBound))
                            if !tally.failures.isEmpty { tally.successesAfterFailure += 1 }
                        }
                    } catch {
                        tally.withLock { $0.failures.append(String(describing: error)) }
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
        }
        try await Task.sleep(for: .seconds(1))
        try await server.stop(mode: "immediate")
        try await Task.sleep(for: .seconds(3))
        try await server.start()
        // Give the writers time to get through again (alone this takes well under a second; the
        // whole suite on two cores once needed more than 30 s for 50 appends).
        let restarted = ContinuousClock.now
        let deadline = restarted + .seconds(60)
        while ContinuousClock.now < deadline, tally.withLock({ $0.successesAfterFailure }) < 50 {
            try await Task.sleep(for: .milliseconds(100))
        }
        print("server restart: 50 appends after the restart took \(ContinuousClock.now - restarted)")
        writing.withLock { $0 = false }
        for writer in writers { await writer.value }

        let result = tally.withLock { $0 }
        print("server restart: \(result.acknowledged.count) appends acknowledged, \(result.failures.count) failed while it was down")
        #expect(!result.failures.isEmpty, "no append failed while the server was down")
        #expect(result.successesAfterFailure >= 50, "appends did not succeed again after the restart")
        #expect(result.failures.allSatisfy { $0.contains("cannot append to the log at postgres://") }, "\(result.failures.prefix(3))")

        let head = try await log.lastPosition()
        let report = try await log.verify(progress: nil)
        #expect(report.isIntact && report.lastPosition == head, "\(String(describing: report.problem))")
        for (id, position) in result.acknowledged {
            let stored = try await log.record(at: position)
            #expect(stored?.eventID == id, "the append acknowledged at \(position) is not there")
        }

        let caughtUp = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < caughtUp, seen.withLock({ $0.count }) < Int(head) {
            try await Task.sleep(for: .milliseconds(50))
        }
        subscriber.cancel()
        _ = await subscriber.result
        #expect(seen.withLock { $0 } == Array(1...head), "the subscription missed or repeated records across the restart")
        await log.close()
    }
}
