//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Projections
import SpeziAccount
import SpeziAccountStore
import SpeziAccountTesting
import Testing

/// The example of the DocC article "Adding a projection of your own": signups per day of the
/// log's clock, defined outside the store's package target.
struct SignupsPerDay: Projection {
    static let name = "signups-per-day"
    var name: String { Self.name }
    var fingerprint: String { "signups-per-day v1" }
    var databaseNames: [String] { ["days"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        guard record.hasType(AccountEvent.Kind.accountCreated.name) else { return }
        let day = Array(Self.day(of: record.timestamp).utf8)
        let count = try state.get("days", key: day).map { UInt64(String(decoding: $0, as: UTF8.self)) ?? 0 } ?? 0
        try state.put("days", key: day, value: Array(String(count + 1).utf8))
    }

    /// "2026-01-31" (UTC).
    static func day(of date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle().year().month().day())
    }
}

/// A projection that only has a name.
private struct NamedOnly: Projection {
    let name: String
    var fingerprint: String { "v1" }
    var databaseNames: [String] { ["nothing"] }
    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {}
}

@Suite("Projections given to the store from outside")
struct AdditionalProjectionTests {
    /// Every day's count, read with read-your-writes.
    static func counts(_ store: AccountStore) async throws -> [String: Int] {
        try await store.readProjection(SignupsPerDay.name) { state in
            var counts: [String: Int] = [:]
            try state.forEach("days") { key, value in
                counts[String(decoding: key, as: UTF8.self)] = Int(String(decoding: value, as: UTF8.self))
                return true
            }
            return counts
        }
    }

    static func status(_ store: AccountStore) async throws -> ProjectionStatus {
        try #require(try await store.projectionStatus().first { $0.name == SignupsPerDay.name })
    }

    @Test("a projection defined in a test target is built from the log, read with read-your-writes, rebuilt, and kept across a reopen")
    func signupsPerDay() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let clock = TestClock(start: Date(timeIntervalSince1970: 1_767_225_600))
        // A day without the projection: it is built from the whole log once given.
        var store = try await fixture.open { $0.clock = { clock.now() } }
        _ = try await store.signup(leland(userId: "first@stanford.edu"))
        _ = try await store.signInAnonymously()
        await store.close()
        clock.advance(by: 86_400)
        let withProjection: (inout AccountStoreOptions) -> Void = { options in
            options.clock = { clock.now() }
            options.additionalProjections = [SignupsPerDay()]
        }
        store = try await fixture.open(withProjection)
        #expect(try await Self.counts(store) == ["2026-01-01": 2])

        // What a command wrote is there when the next read returns, as in the details cache.
        _ = try await store.signup(leland(userId: "second@stanford.edu"))
        _ = try await store.signup(leland(userId: "third@stanford.edu"))
        #expect(try await Self.counts(store) == ["2026-01-01": 2, "2026-01-02": 2])
        #expect(try store.readProjectionNow(SignupsPerDay.name) { try $0.get("days", key: Array("2026-01-02".utf8)) } == Array("2".utf8))
        let head = try await store.logReader.lastPosition()
        let built = try await Self.status(store)
        #expect(built.checkpoint == head && built.lag == 0 && built.failure == nil)

        // A rebuild makes a new generation from the log, with the same counts.
        try await store.rebuildProjection(SignupsPerDay.name)
        let rebuilt = try await Self.status(store)
        #expect(rebuilt.generation > built.generation && rebuilt.checkpoint == head)
        #expect(try await Self.counts(store) == ["2026-01-01": 2, "2026-01-02": 2])
        await store.close()

        // Reopened: the same generation at the same checkpoint (nothing applied twice), and on from there.
        store = try await fixture.open(withProjection)
        let reopened = try await Self.status(store)
        #expect(reopened.generation == rebuilt.generation && reopened.checkpoint == head)
        #expect(try await Self.counts(store) == ["2026-01-01": 2, "2026-01-02": 2])
        clock.advance(by: 86_400)
        _ = try await store.signup(leland(userId: "fourth@stanford.edu"))
        try await store.waitUntilCaughtUp()
        #expect(try store.readProjectionNow(SignupsPerDay.name) { try $0.get("days", key: Array("2026-01-03".utf8)) } == Array("1".utf8))
        await store.close()
    }

    @Test("a projection may not take a built-in projection's name, nor one given twice")
    func namesAreTheirOwn() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        await #expect(throws: ProjectionError.duplicateName(AccountDetailsProjection.projectionName)) {
            try await fixture.open { $0.additionalProjections = [NamedOnly(name: AccountDetailsProjection.projectionName)] }
        }
        await #expect(throws: ProjectionError.duplicateName("twice")) {
            try await fixture.open { $0.additionalProjections = [NamedOnly(name: "twice"), NamedOnly(name: "twice")] }
        }
        // The store opens afterwards: the refused opens left nothing behind.
        let store = try await fixture.open { $0.additionalProjections = [NamedOnly(name: "once")] }
        #expect(try await store.projectionStatus().map(\.name).contains("once"))
        await store.close()
    }
}
