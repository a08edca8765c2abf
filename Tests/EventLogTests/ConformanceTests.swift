//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogConformance
import Foundation
import LMDB
import Testing

@testable import EventLog

@Suite("The log-backend conformance kit, run against the LMDB log")
struct ConformanceTests {
    @Test("the LMDB log passes every check of the kit", arguments: LogConformance.checks)
    func lmdbLog(check: String) async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let root = directory.path("logs")
        let kit = LogConformance(
            open: { name in try EventLog(path: root + "/" + name) },
            tamper: { name, position in
                // Change one payload byte and leave the record's checksum as it was.
                let environment = try Environment(path: root + "/" + name)
                defer { environment.close() }
                let records = try environment.openDatabase("records")
                try environment.write { txn in
                    let key = BigEndian.bytes(position)
                    guard var value = try txn.get(records, key: key) else { return }
                    value[value.count - 1] ^= 0x01
                    try txn.put(records, key: key, value: value)
                }
            })
        let outcome = await kit.run(check)
        #expect(outcome.passed, "\(outcome)")
    }

    @Test("the kit can fail: a backend that reuses positions is caught")
    func kitCatchesABrokenBackend() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let root = directory.path("logs")
        let kit = LogConformance(open: { name in ForgetfulLog(try EventLog(path: root + "/" + name)) })
        let outcome = await kit.run("idempotent retries")
        #expect(!outcome.passed)
    }
}

/// A backend that wrongly writes a retried batch again: the kit must notice.
final class ForgetfulLog: EventLogBackend {
    let base: EventLog
    init(_ base: EventLog) { self.base = base }
    var location: String { base.location }
    func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>
    ) async throws -> AppendResult {
        let fresh = events.map { ProposedEvent(type: $0.type, schemaVersion: $0.schemaVersion, metadata: $0.metadata, payload: $0.payload) }
        return try await base.append(fresh, to: streamID, expectedVersion: .any, claims: claims, releases: releases)
    }
    func appendImported(
        _ events: [(event: ProposedEvent, timestamp: Date)], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>,
        releases: Set<String>
    ) async throws -> AppendResult {
        try await base.appendImported(events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases)
    }
    func claimOwner(_ claim: String) async throws -> String? { try base.claimOwner(claim) }
    func lastPosition() async throws -> UInt64 { try base.lastPosition() }
    func record(at position: UInt64) async throws -> RecordedEvent? { try base.record(at: position) }
    func read(from position: UInt64, direction: ReadDirection, limit: Int) async throws -> [RecordedEvent] {
        try base.read(from: position, direction: direction, limit: limit)
    }
    func readStream(_ streamID: String, from version: UInt64, limit: Int) async throws -> [RecordedEvent] {
        try base.readStream(streamID, from: version, limit: limit)
    }
    func streamVersion(_ streamID: String) async throws -> UInt64? { try base.streamVersion(streamID) }
    func subscribeBatches(after position: UInt64, stream streamID: String?, batchSize: Int) -> RecordBatches {
        base.subscribeBatches(after: position, stream: streamID, batchSize: batchSize)
    }
    func waitForCommit(beyond position: UInt64) async { await base.waitForCommit(beyond: position) }
    func verify(batchSize: Int, progress: (@Sendable (VerificationProgress) -> Void)?) async throws -> VerificationReport {
        try base.verify(batchSize: batchSize, progress: progress)
    }
    func statistics() async throws -> LogStatistics { try base.statistics() }
    func sync() async throws { try base.sync() }
    func close() async { await base.close() }
    func metadata(_ name: String) async throws -> [UInt8]? { try base.metadata(name) }
    func setMetadataIfAbsent(_ name: String, _ value: [UInt8]) async throws -> [UInt8] { try base.setMetadataIfAbsent(name, value) }
}
