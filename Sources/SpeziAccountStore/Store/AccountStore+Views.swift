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

    /// Reads the projection `name` (one of ``AccountStoreOptions/additionalProjections``, say) once
    /// it has applied everything the log held when this was called, so that it shows every
    /// command that returned before: read-your-writes, as the details cache gives it. The read is
    /// one transaction of the serving generation (a rebuild that takes over never shows half).
    ///
    /// - Parameters:
    ///   - name: The projection's name.
    ///   - body: Reads the state (`ProjectionState.get(_:key:)`, `forEach`); it must not keep it
    ///     beyond the call.
    /// - Returns: What `body` returns.
    /// - Throws: The log's `EventLogError` when its last position cannot be read; `ProjectionError`
    ///   for an unknown name, a projection that failed or does not catch up within
    ///   `ProjectionStoreOptions.readYourWritesTimeout`; or what `body` throws.
    public func readProjection<T>(_ name: String, _ body: (ProjectionState) throws -> T) async throws -> T {
        let head = try await log.lastPosition()
        try await projections.waitUntilApplied(name, position: head)
        return try projections.read(name, body)
    }

    /// Reads the projection `name` as it is now, without waiting for it to catch up with the log
    /// (see ``readProjection(_:_:)``, which does).
    ///
    /// - Parameters:
    ///   - name: The projection's name.
    ///   - body: Reads the state; it must not keep it beyond the call.
    /// - Returns: What `body` returns.
    /// - Throws: `ProjectionError` for an unknown name, what `body` throws, or a storage error.
    public func readProjectionNow<T>(_ name: String, _ body: (ProjectionState) throws -> T) throws -> T {
        try projections.read(name, body)
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
