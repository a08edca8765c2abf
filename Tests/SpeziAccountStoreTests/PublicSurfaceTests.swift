//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import SpeziAccount
import SpeziAccountStore
import SpeziAccountTesting
import Testing

/// What a user of the store reaches without package access: the log read-only, the projections'
/// status, rebuild and wait, and the test kit's seeding.
@Suite("The store's public doors")
struct PublicSurfaceTests {
    @Test("the log as handed out reads what the store wrote and cannot be cast back to a writable backend")
    func readOnlyLog() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let created = try await store.signup(leland())
        let reader = store.logReader
        #expect(!(reader is any EventLogBackend))
        let head = try await reader.lastPosition()
        #expect(head >= 1)
        let stream = try await reader.readStream(created.accountId)
        #expect(stream.map(\.type).first == "account.created")
        #expect(try await reader.streamVersion(created.accountId) == UInt64(stream.count))
        let report = try await reader.verify()
        #expect(report.problem == nil && report.lastPosition == head)
        await store.close()
    }

    @Test("seeded accounts are applied, rebuilt and reported through the store's own methods")
    func seedRebuildStatus() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let ids = (0..<20).map { "seeded-\($0)" }
        try store.seedKeys(for: ids)
        for (index, id) in ids.enumerated() {
            try await store.seed(
                [.accountCreated(userId: "seed\(index)@example.org", passwordHash: "unused", isAnonymous: false, values: [:])], as: id)
        }
        let head = try await store.logReader.lastPosition()
        try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: head)
        #expect(try store.details(of: "seeded-7")?.userId == "seed7@example.org")
        // A seeded stream cannot be seeded twice.
        await #expect(throws: EventLogError.self) {
            try await store.seed(
                [.accountCreated(userId: "again@example.org", passwordHash: "unused", isAnonymous: false, values: [:])], as: "seeded-7")
        }
        let before = try await store.projectionStatus().first { $0.name == AccountDetailsProjection.projectionName }
        try await store.rebuildProjection(AccountDetailsProjection.projectionName)
        let after = try #require(try await store.projectionStatus().first { $0.name == AccountDetailsProjection.projectionName })
        #expect(after.generation > (before?.generation ?? 0))
        #expect(after.checkpoint == head)
        #expect(try store.details(of: "seeded-19")?.userId == "seed19@example.org")
        await store.close()
    }

    @Test("a store opened on a backend the caller opened: it writes there, reopens from there, and closes it")
    func storeTakesABackend() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let logPath = fixture.directory.appendingPathComponent("elsewhere-log").path
        try FileManager.default.createDirectory(at: fixture.directory, withIntermediateDirectories: true)
        var logOptions = EventLogOptions()
        logOptions.sync = .relaxed
        let log = try EventLog(path: logPath, options: logOptions)
        let store = try await AccountStore(directory: fixture.directory.path, log: log, options: fixture.options())
        let created = try await store.signup(leland())
        #expect(try log.streamVersion(created.accountId) == 1)
        await store.close()
        // Closed with the store: appending now fails.
        let afterClose = #expect(throws: EventLogError.self) { try log.lastPosition() }
        guard case .closed = afterClose else {
            Issue.record("reading a closed log: \(String(describing: afterClose)), not closed")
            return
        }
        // Opened again on a new backend over the same files: the account is there.
        let again = try await AccountStore(
            directory: fixture.directory.path, log: try EventLog(path: logPath, options: logOptions), options: fixture.options())
        #expect(try again.details(of: created.accountId)?.userId == "lelandstanford@stanford.edu")
        await again.close()
    }
}
