//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// A log backend that hands every call to another one: the base of test backends that change one
/// behaviour (a broken one the conformance kit must catch), or that hide what the base offers
/// besides the protocol (the LMDB log's in-place scan).
// Unchecked Sendable: it holds only the immutable reference to a backend, which is Sendable; subclasses add their own guarded state.
open class ForwardingLog: EventLogBackend, @unchecked Sendable {
    /// The backend every call goes to.
    public let base: any EventLogBackend

    /// A backend that forwards to `base`.
    public init(_ base: any EventLogBackend) { self.base = base }

    /// The base's location.
    open var location: String { base.location }

    /// Forwards the append.
    open func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>
    ) async throws -> AppendResult {
        try await base.append(events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases)
    }

    /// Forwards the imported append.
    open func appendImported(
        _ events: [(event: ProposedEvent, timestamp: Date)], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>,
        releases: Set<String>
    ) async throws -> AppendResult {
        try await base.appendImported(events, to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases)
    }

    /// Forwards the read.
    open func claimOwner(_ claim: String) async throws -> String? { try await base.claimOwner(claim) }
    /// Forwards the read.
    open func lastPosition() async throws -> UInt64 { try await base.lastPosition() }
    /// Forwards the read.
    open func record(at position: UInt64) async throws -> RecordedEvent? { try await base.record(at: position) }
    /// Forwards the read.
    open func read(from position: UInt64, direction: ReadDirection, limit: Int) async throws -> [RecordedEvent] {
        try await base.read(from: position, direction: direction, limit: limit)
    }
    /// Forwards the read.
    open func readStream(_ streamID: String, from version: UInt64, limit: Int) async throws -> [RecordedEvent] {
        try await base.readStream(streamID, from: version, limit: limit)
    }
    /// Forwards the read.
    open func streamVersion(_ streamID: String) async throws -> UInt64? { try await base.streamVersion(streamID) }
    /// Forwards the subscription.
    open func subscribeBatches(after position: UInt64, stream streamID: String?, batchSize: Int) -> RecordBatches {
        base.subscribeBatches(after: position, stream: streamID, batchSize: batchSize)
    }
    /// Forwards the wait.
    open func waitForCommit(beyond position: UInt64) async { await base.waitForCommit(beyond: position) }
    /// Forwards the check.
    open func verify(batchSize: Int, progress: (@Sendable (VerificationProgress) -> Void)?) async throws -> VerificationReport {
        try await base.verify(batchSize: batchSize, progress: progress)
    }
    /// Forwards the read.
    open func statistics() async throws -> LogStatistics { try await base.statistics() }
    /// Forwards the flush.
    open func sync() async throws { try await base.sync() }
    /// Forwards the close.
    open func close() async { await base.close() }
    /// Forwards the read.
    open func metadata(_ name: String) async throws -> [UInt8]? { try await base.metadata(name) }
    /// Forwards the write.
    open func setMetadataIfAbsent(_ name: String, _ value: [UInt8]) async throws -> [UInt8] {
        try await base.setMetadataIfAbsent(name, value)
    }
}
