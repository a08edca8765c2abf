//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension EventLog: EventLogBackend {
    /// The log's folder.
    public var location: String { path }

    /// Appends events stamped with their own times (see `EventLogBackend.appendImported`).
    ///
    /// - Parameters:
    ///   - events: the events, in order, each with the time it was first recorded; a time earlier than
    ///     the log's last record is raised to it.
    ///   - streamID: the stream they go to.
    ///   - expectedVersion: the check the stream must pass first.
    ///   - claims: unique keys the stream takes.
    ///   - releases: keys the stream gives up.
    /// - Returns: the events' positions, the stream's new version, and whether the append was a retry.
    /// - Throws: what `append(_:to:expectedVersion:claims:releases:)` throws; nothing is written then.
    public func appendImported(
        _ events: [(event: ProposedEvent, timestamp: Date)], to streamID: String, expectedVersion: ExpectedVersion = .any,
        claims: Set<String> = [], releases: Set<String> = []
    ) async throws -> AppendResult {
        try await append(
            events.map(\.event), to: streamID, expectedVersion: expectedVersion, claims: claims, releases: releases,
            timestamps: events.map { Int64(($0.timestamp.timeIntervalSince1970 * 1_000_000).rounded()) })
    }
}

extension SyncMode {
    /// LMDB's way of giving each durability.
    init(_ durability: Durability) {
        switch durability {
        case .durable: self = .durable
        case .relaxed: self = .relaxed
        case .lastCommitMayRollBack: self = .lastCommitMayRollBack
        }
    }
}
