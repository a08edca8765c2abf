//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import EventLogProtocol
import Foundation
import PostgresEventLog
import SpeziAccount
import SpeziAccountStore
import Synchronization
import TestSupport
import TestTiers
import Testing

@Suite("Reading from a hot standby", .serialized, .integration)
struct PostgresStandbyTests {
    init() { PostgresLogSupport.register() }

    @Test("a node reads and subscribes on a streaming standby while it appends on the primary; the lag is reported and caught up")
    func standbyReads() async throws {
        let primary = try await PostgresServer.start(name: "primary")
        defer { primary.remove() }
        let standby = try await PostgresServer.startStandby(of: primary)
        defer { standby.remove() }
        #expect(try await standby.psql("SELECT pg_is_in_recovery()").trimmingCharacters(in: .whitespacesAndNewlines) == "t")
        let folders = (0..<2).map { FileManager.default.temporaryDirectory.appendingPathComponent("standby-node-\($0)-\(UUID().uuidString)") }
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }

        // Node 0 reads from the standby; node 1 works on the primary alone.
        let readingURL = primary.url() + "&standby=127.0.0.1:\(standby.port)"
        let reader = try await AccountStore(directory: folders[0].path, options: nodeOptions(readingURL))
        let writer = try await AccountStore(directory: folders[1].path, options: nodeOptions(primary.url()))
        let log = try #require(reader.log as? PostgresEventLog)
        #expect(log.location.contains("standby=127.0.0.1:\(standby.port)"))
        let seen = Mutex<[UInt64]>([])
        let subscriber = Task {
            for try await record in reader.log.subscribeRecords(after: 0, stream: nil, batchSize: 16) {
                seen.withLock { $0.append(record.position) }
            }
        }

        // Appends of the standby-reading node go to the primary; its reads catch up through the standby.
        var ids: [String] = []
        for index in 0..<10 {
            var details = AccountDetails()
            details.userId = "standby-\(index)@example.org"
            details.password = "correct horse"
            details.name = PersonNameComponents(givenName: "Replica\(index)", familyName: "Reader")
            ids.append(try await reader.signup(details).accountId)
        }
        try await reader.waitUntilCaughtUp()
        for (index, id) in ids.enumerated() { #expect(try reader.details(of: id)?.name?.givenName == "Replica\(index)") }
        let caughtUp = try #require(try await log.standbyLag())
        let headThen = try await writer.log.lastPosition()
        #expect(caughtUp.records == 0 && caughtUp.primaryPosition == headThen)

        // Replay paused: the primary moves on, the reader's standby does not, and the lag says so.
        _ = try await standby.psql("SELECT pg_wal_replay_pause()")
        var late = AccountDetails()
        late.userId = "late@example.org"
        late.password = "correct horse"
        late.name = PersonNameComponents(givenName: "Late", familyName: "Arrival")
        let lateId = try await writer.signup(late).accountId
        let behind = try #require(try await log.standbyLag())
        #expect(behind.records > 0, "\(behind)")
        let headNow = try await writer.log.lastPosition()
        #expect(behind.primaryPosition == headNow)
        // The reader's projections follow the paused standby: applied through the old head, they
        // stay there (checked for a second) while the primary is at the new one.
        try await reader.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: headThen)
        for _ in 0..<10 {
            let applied = try await reader.projections.status().first { $0.name == AccountDetailsProjection.projectionName }?.checkpoint
            #expect(applied == headThen, "the reader applied \(applied.map(String.init) ?? "?") of \(headNow) with its standby paused at \(headThen)")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect((seen.withLock { $0.last } ?? 0) <= headThen, "the reader's subscription saw nothing past the standby")
        #expect(try reader.details(of: lateId) == nil, "the reader's projections follow the standby, not the primary")
        #expect(try writer.details(of: lateId)?.name?.givenName == "Late")

        // Replay resumed: the reader catches up, and its subscription saw every record once, in order.
        _ = try await standby.psql("SELECT pg_wal_replay_resume()")
        try await reader.waitUntilCaughtUp()
        #expect(try reader.details(of: lateId)?.name?.givenName == "Late")
        #expect(try await log.standbyLag()?.records == 0)
        let head = try await writer.log.lastPosition()
        let deadline = ContinuousClock.now + .seconds(10)
        while seen.withLock({ $0.count }) < Int(head) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        subscriber.cancel()
        #expect(seen.withLock { $0 } == Array(1...head))
        #expect(try await log.verify(progress: nil).isIntact)
        await reader.close()
        await writer.close()
    }
}
