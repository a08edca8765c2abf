//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogConformance
import EventLogProtocol
import Foundation
import LMDB
import TestSupport
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
final class ForgetfulLog: ForwardingLog, @unchecked Sendable {
    override func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>
    ) async throws -> AppendResult {
        let fresh = events.map { ProposedEvent(type: $0.type, schemaVersion: $0.schemaVersion, metadata: $0.metadata, payload: $0.payload) }
        return try await base.append(fresh, to: streamID, expectedVersion: .any, claims: claims, releases: releases)
    }
}
