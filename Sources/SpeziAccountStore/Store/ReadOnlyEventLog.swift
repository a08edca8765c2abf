//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol

/// A store's log as it hands it out: only the reading half, in a wrapper of its own so that a
/// caller cannot cast it back to the backend and append around the store's checks.
final class ReadOnlyEventLog: EventLogReader {
    private let base: any EventLogReader

    init(_ base: any EventLogReader) {
        self.base = base
    }

    var location: String { base.location }

    func claimOwner(_ claim: String) async throws -> String? {
        try await base.claimOwner(claim)
    }

    func lastPosition() async throws -> UInt64 {
        try await base.lastPosition()
    }

    func record(at position: UInt64) async throws -> RecordedEvent? {
        try await base.record(at: position)
    }

    func read(from position: UInt64, direction: ReadDirection, limit: Int) async throws -> [RecordedEvent] {
        try await base.read(from: position, direction: direction, limit: limit)
    }

    func readStream(_ streamID: String, from version: UInt64, limit: Int) async throws -> [RecordedEvent] {
        try await base.readStream(streamID, from: version, limit: limit)
    }

    func streamVersion(_ streamID: String) async throws -> UInt64? {
        try await base.streamVersion(streamID)
    }

    func subscribeBatches(after position: UInt64, stream streamID: String?, batchSize: Int) -> RecordBatches {
        base.subscribeBatches(after: position, stream: streamID, batchSize: batchSize)
    }

    func waitForCommit(beyond position: UInt64) async {
        await base.waitForCommit(beyond: position)
    }

    func verify(batchSize: Int, progress: (@Sendable (VerificationProgress) -> Void)?) async throws -> VerificationReport {
        try await base.verify(batchSize: batchSize, progress: progress)
    }

    func statistics() async throws -> LogStatistics {
        try await base.statistics()
    }

    func metadata(_ name: String) async throws -> [UInt8]? {
        try await base.metadata(name)
    }
}
