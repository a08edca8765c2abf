//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Logging
import ServiceLifecycle
import Spezi
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

@Suite("Shutting down: a service group's graceful shutdown and the Spezi runtime's close the store")
struct LifecycleTests {
    @Test("in a ServiceGroup, signups run until a graceful shutdown; then the store is closed and everything acknowledged is there")
    func serviceGroup() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.sync = .durable }
        let group = ServiceGroup(services: [store], gracefulShutdownSignals: [], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        var acknowledged: [String] = []
        for index in 0..<10 { acknowledged.append(try await store.signup(leland(userId: "group-\(index)@example.org")).accountId) }
        await group.triggerGracefulShutdown()
        try await running.value
        await #expect(throws: EventLogError.closed(path: store.log.location)) { try await store.signup(leland(userId: "late@example.org")) }
        let reopened = try await fixture.open()
        for id in acknowledged { await #expect(try reopened.accounts.load(id)?.isDeleted == false) }
        await reopened.close()
    }

    @Test("SpeziRuntime.shutdown() tells the account service, which closes its store; a second shutdown does nothing")
    func speziShutdown() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let service = EventSourcedAccountService(store: store)
        let counter = TerminationCounter()
        let runtime = SpeziRuntime(
            configuration: Configuration {
                AccountConfiguration(service: service, configuration: [.requires(\.userId), .requires(\.password)])
                counter
            })
        try await runtime.boot()
        try await store.signup(leland())
        await runtime.shutdown()
        #expect(counter.calls == 1)
        await #expect(throws: EventLogError.closed(path: store.log.location)) { try await store.signup(leland(userId: "after@example.org")) }
        await runtime.shutdown()
        // The second shutdown told no module again, and the store stays closed.
        #expect(counter.calls == 1)
        await #expect(throws: EventLogError.closed(path: store.log.location)) { try await store.signup(leland(userId: "later@example.org")) }
    }
}

/// Counts the termination hooks it receives.
private final class TerminationCounter: Module, LifecycleHandler, Sendable {
    private let count = Mutex(0)
    var calls: Int { count.withLock { $0 } }

    func applicationWillTerminate() async {
        count.withLock { $0 += 1 }
    }
}
