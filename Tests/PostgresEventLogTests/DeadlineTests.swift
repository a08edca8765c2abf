//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import PostgresEventLog
import Synchronization
import Testing

/// The deadlines that end an operation the server does not answer: one watching task for the
/// process, not a timer task per operation.
@Suite("Deadlines of PostgreSQL operations")
struct DeadlineTests {
    private final class Fired: Sendable {
        let names = Mutex<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test("an operation past its deadline is ended once; one removed before its deadline and one not yet due are not")
    func watch() async throws {
        // A thread preempted past the deadline between adding and removing would let the removed
        // one fire: such an attempt proves nothing, and the next one (with a new watch) decides.
        for _ in 0..<5 {
            let watch = DeadlineWatch(tick: .milliseconds(10))
            let fired = Fired()
            let deadline = ContinuousClock.now + .seconds(1)
            _ = watch.add(deadline) { fired.add("due") }
            let removed = watch.add(deadline) { fired.add("removed") }
            let later = watch.add(.now + .seconds(3_600)) { fired.add("later") }
            watch.remove(removed)
            guard ContinuousClock.now < deadline else {
                watch.remove(later)
                continue
            }
            let patience = ContinuousClock.now + .seconds(30)
            while fired.all.isEmpty && ContinuousClock.now < patience { try await Task.sleep(for: .milliseconds(10)) }
            // Both had the same deadline: the pass that ended the first would have ended the second.
            #expect(fired.all == ["due"])
            watch.remove(later)
            return
        }
        Issue.record("every attempt was preempted past its deadline before the removal")
    }

    @Test("an outage's start brings forward the deadlines of its server's operations under way, not others'")
    func shortenedAtOutage() async throws {
        let watch = DeadlineWatch(tick: .milliseconds(10))
        let fired = Fired()
        let serverTicket = watch.add(.now + .seconds(3_600), owner: "server:5432") { fired.add("server") }
        let soonTicket = watch.add(.now + .milliseconds(20), owner: "server:5432") { fired.add("soon") }
        let otherTicket = watch.add(.now + .seconds(3_600), owner: "other:5432") { fired.add("other") }
        let unowned = watch.add(.now + .seconds(3_600)) { fired.add("unowned") }
        // Only the one due later than the new limit moves.
        #expect(watch.shorten(owner: "server:5432", to: .now + .milliseconds(50)) == 1)
        let patience = ContinuousClock.now + .seconds(30)
        while fired.all.count < 2 && ContinuousClock.now < patience { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(fired.all.sorted() == ["server", "soon"])
        for ticket in [serverTicket, soonTicket, otherTicket, unowned] { watch.remove(ticket) }
    }

    @Test("a body that does not answer is answered at its deadline with a clear error, and cancelled")
    func deadlineAnswers() async throws {
        let cancelled = Fired()
        let error = await #expect(throws: (any Error).self) {
            _ = try await PostgresEventLog.withDeadline(.milliseconds(50), doing: "wait for a server that never answers") {
                do {
                    try await Task.sleep(for: .seconds(3_600))
                } catch {
                    cancelled.add("body")
                    throw error
                }
                return 1
            }
        }
        #expect(
            "\(error.map { String(describing: $0) } ?? "")".contains("cannot wait for a server that never answers: no answer from the server within"))
        for _ in 0..<1_000 where cancelled.all.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(cancelled.all == ["body"])
    }

    @Test("a body that answers in time returns its value")
    func answersInTime() async throws {
        let value = try await PostgresEventLog.withDeadline(.seconds(60), doing: "add", cancellable: false) { 40 + 2 }
        #expect(value == 42)
    }

    @Test(
        "one part of a process seeing its server go cuts the waits of every part on that server; only a try begun after that says it is back, and its word cuts the waits begun during the outage"
    )
    func sharedOutage() async throws {
        struct Lost: Error {}
        let server = "outage-\(UUID().uuidString):5432"
        let logger = Logger(label: "DeadlineTests")
        let listen = PostgresOutage("notifications", logger: logger, server: server, inFlightLimit: .milliseconds(100))
        let appends = PostgresOutage("appends", logger: logger, server: server, inFlightLimit: .milliseconds(100))
        let unrelated = PostgresOutage("another server", logger: logger, server: "other-\(UUID().uuidString):5432")
        let hang: @Sendable () async throws -> Int = {
            try await Task.sleep(for: .seconds(3_600))
            return 0
        }
        // A read sent before the crash has the whole hour; the notifications connection sees the crash.
        let sentBefore = ContinuousClock.now
        let read = Task { try await PostgresEventLog.withDeadline(.seconds(3_600), doing: "read", server: server, hang) }
        try await Task.sleep(for: .milliseconds(50))
        listen.failed(Lost())
        let cut = await read.result
        #expect(throws: (any Error).self) { try cut.get() }
        #expect(ContinuousClock.now - sentBefore < .seconds(30), "the read was not cut short")
        // Every part on the server knows of the outage; a part on another server does not.
        #expect(appends.isOngoing)
        #expect(!unrelated.isOngoing)
        // A try that began before the crash and answers now says nothing of the server now.
        appends.succeeded(tryStarted: sentBefore)
        #expect(listen.isOngoing)
        // A wait begun during the outage is cut once a try begun after the crash answers.
        let waiting = Task { try await PostgresEventLog.withDeadline(.seconds(3_600), doing: "append", server: server, hang) }
        try await Task.sleep(for: .milliseconds(50))
        listen.succeeded(tryStarted: .now)
        #expect(!appends.isOngoing && !listen.isOngoing)
        let recovered = ContinuousClock.now
        await #expect(throws: (any Error).self) { try await waiting.value }
        #expect(ContinuousClock.now - recovered < .seconds(30), "the wait begun during the outage was not cut short")
    }
}
