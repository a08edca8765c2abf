//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// ordo-one/benchmark suites for the account store's read paths: `swift package benchmark` from
// this folder. The side-by-side figures against raw LMDB and SQLite come from peer-compare.

import Benchmark
import EventLog
import Foundation
import Projections
import SpeziAccountStore
import Synchronization

/// A log of `accounts` accounts with ten account events each (one signup, nine detail changes of
/// ~300 bytes) written through `AccountLog`, and its details cache, built once per suite.
final class Fixture: Sendable {
    static let accounts = 10_000
    let directory: URL
    let log: EventLog
    let cache: ProjectionStore
    let accountIds: [String]

    private init(directory: URL, log: EventLog, cache: ProjectionStore, accountIds: [String]) {
        self.directory = directory
        self.log = log
        self.cache = cache
        self.accountIds = accountIds
    }

    static func make() async throws -> Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("accountstore-bench-\(UUID().uuidString)")
        var options = EventLogOptions()
        options.sync = .relaxed
        let log = try EventLog(path: directory.appendingPathComponent("log").path, options: options)
        let accounts = AccountLog(log: log)
        let ids = (0..<Self.accounts).map { String(format: "account-%08d-0000-4000-8000-000000000000", $0) }
        for (index, id) in ids.enumerated() {
            try await accounts.append(events(index), to: id, expectedVersion: .noStream)
        }
        let cache = try ProjectionStore(
            path: directory.appendingPathComponent("projections").path, log: log,
            projections: [AccountDetailsProjection()])
        try await cache.waitUntilApplied(AccountDetailsProjection.projectionName, position: try log.lastPosition())
        return Fixture(directory: directory, log: log, cache: cache, accountIds: ids)
    }

    private static func events(_ index: Int) -> [AccountEvent] {
        func json(_ text: String) -> Data { Data(text.utf8) }
        let hash = "$scrypt$ln=17,r=8,p=1$" + String(repeating: "s", count: 22) + "$" + String(repeating: "k", count: 43)
        let created = AccountEvent.accountCreated(
            userId: "user\(index)@example.org", passwordHash: hash, isAnonymous: false,
            values: [
                "name": json(#"{"familyName":"Lovelace","givenName":"Ada"}"#),
                "dateOfBirth": json("-1000000000"),
                "genderIdentity": json(#""female""#)
            ])
        let changes = (1..<10).map { change in
            AccountEvent.detailsModified(
                modified: [
                    "biography": json("\"" + String(repeating: "enjoys hiking and reading \(change) ", count: 6) + "\""),
                    "phoneNumber": json(#""+1 650 555 \#(1_000 + index % 9_000)""#)
                ], removed: [])
        }
        return [created] + changes
    }

    func close() async {
        await cache.close()
        await log.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

let fixture = Mutex<Fixture?>(nil)

@Sendable func makeFixture() async throws {
    if fixture.withLock({ $0 }) == nil {
        let made = try await Fixture.make()
        fixture.withLock { $0 = made }
    }
}

@Sendable func closeFixture() async {
    let current = fixture.withLock { state -> Fixture? in
        defer { state = nil }
        return state
    }
    await current?.close()
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        maxDuration: .seconds(5), maxIterations: 1_000)

    Benchmark("Replay 100,000 account events, decoded in place", configuration: .init(maxIterations: 20)) { benchmark in
        guard let log = fixture.withLock({ $0 })?.log else { fatalError("no fixture") }
        benchmark.startMeasurement()
        var total = 0
        try log.scan { record in
            if case let .detailsModified(modified, _) = try AccountEvent.decode(type: record.type, payload: record.payload) {
                total &+= modified.count
            }
            return true
        }
        blackHole(total)
    } setup: {
        try await makeFixture()
    } teardown: {
        await closeFixture()
    }

    Benchmark("Point read of one account's details", configuration: .init(scalingFactor: .kilo)) { benchmark in
        guard let current = fixture.withLock({ $0 }) else { fatalError("no fixture") }
        // A fixed spread over the accounts (a prime stride), so every run reads the same ones.
        let ids = (0..<benchmark.scaledIterations.count).map { current.accountIds[($0 &* 7_919) % current.accountIds.count] }
        benchmark.startMeasurement()
        for id in ids {
            blackHole(try AccountDetailsProjection.state(of: id, in: current.cache))
        }
    } setup: {
        try await makeFixture()
    } teardown: {
        await closeFixture()
    }
}
