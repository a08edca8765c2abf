//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Projections

/// The public doors to the store's log and projections: the log read-only, the projections'
/// status, rebuilds and waits. The log and the projection store themselves are package access, so
/// that every change goes through the store's commands.
extension AccountStore {
    /// The log, read-only: records, streams, subscriptions, verification, statistics. It cannot
    /// be turned back into a writable log; every change goes through the store's commands.
    public var logReader: any EventLogReader { ReadOnlyEventLog(log) }

    /// Each projection's state: its generation, position, lag and any storage error.
    ///
    /// - Returns: one status per projection, in the order they were configured.
    /// - Throws: a storage error of the projections' environment.
    public func projectionStatus() async throws -> [ProjectionStatus] {
        try await projections.status()
    }

    /// Builds the projection `name` again from the whole log, beside the one that serves reads,
    /// and switches to it once it has caught up (after a schema change, say).
    ///
    /// - Parameters:
    ///   - name: the projection's name, e.g. `AccountDetailsProjection.projectionName`.
    ///   - progress: called with the position reached and the log's last position.
    /// - Throws: `ProjectionError` (Projections) for an unknown name or a failed build.
    public func rebuildProjection(_ name: String, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws {
        try await projections.rebuild(name, progress: progress)
    }

    /// Returns once the projection `name` has applied the log up to `position`.
    ///
    /// - Parameters:
    ///   - name: The projection's name, e.g. ``AccountDetailsProjection/projectionName``.
    ///   - position: The log position the projection must have applied.
    /// - Throws: `ProjectionError` (Projections) for an unknown name, or the store's read-your-writes
    ///   timeout.
    public func waitUntilApplied(_ name: String, position: UInt64) async throws {
        try await projections.waitUntilApplied(name, position: position)
    }
}
