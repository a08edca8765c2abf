//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB

/// A read model built by replaying the event log: it folds records, in order, into its own
/// key-value databases (kept in a local LMDB environment, which stays out of this API). The
/// ``ProjectionStore`` commits the state it writes for a batch of records together with the
/// position it reached, so a crash never applies a record twice or skips one.
///
/// Records arrive as `LogRecord`s: the LMDB log hands them over in place, other backends as
/// copied `RecordedEvent`s; a projection reads both the same way.
public protocol Projection: Sendable {
    /// What the projection keeps in memory during one batch (one write transaction), e.g. the
    /// decoded states of the accounts the batch touched, written out once in ``finishBatch(_:state:)``.
    /// `Void` for a projection that writes each record's effect at once.
    associatedtype BatchState = Void
    /// A stable name, unique in a store (e.g. `account-details`).
    var name: String { get }
    /// Everything that shapes the projection's state (its version, configured keys, upcasters…).
    /// When it differs from the one its stored state was built with, the store rebuilds it.
    var fingerprint: String { get }
    /// The names of the databases it keeps (each generation gets its own copies).
    var databaseNames: [String] { get }
    /// The state a batch starts with.
    ///
    /// - Returns: the empty state of a new batch.
    func makeBatchState() -> BatchState
    /// Folds one record into the state. Throwing stops this projection at this record; it reports
    /// the failure and applies nothing more until it is rebuilt.
    ///
    /// - Parameters:
    ///   - record: the next record, in log order (or in stream order, for a stream-by-stream build);
    ///     valid only during the call.
    ///   - state: the generation's databases, inside the batch's transaction.
    ///   - batch: what the projection keeps in memory during the batch.
    /// - Throws: any error, to stop the projection at this record until it is rebuilt (waiters then
    ///   get `ProjectionError.failed`); an error that says it is transient (`TransientFailure`) is
    ///   retried later instead.
    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout BatchState) throws
    /// Called once per batch, after the last `apply` and before the batch commits with its
    /// checkpoint: writes out what the batch kept in memory.
    ///
    /// - Parameters:
    ///   - batch: what the batch's `apply` calls kept in memory.
    ///   - state: the generation's databases, inside the batch's transaction.
    /// - Throws: any error, to stop the projection as an error of `apply` does; nothing of the batch is
    ///   committed then.
    func finishBatch(_ batch: inout BatchState, state: ProjectionState) throws
    /// True when the state of each stream depends on that stream's records alone, applied in
    /// version order, so that records of different streams may be applied in any interleaving.
    /// A rebuild of such a projection on a log that can read stream by stream applies the log
    /// stream after stream, each stream's records together (see ``ProjectionStore``). False by default.
    ///
    /// Such a rebuild reads a large chunk in two parts at once, on two threads: `apply` may run
    /// for the streams of the second part on a second thread, with a read-only state (the
    /// generation as it was before the chunk), while the first part is applied; ``finishBatch(_:state:)``
    /// then writes each part's batch in the chunk's transaction. So `apply` should only read its
    /// state and keep its changes in the batch. A projection that writes in `apply` is noticed
    /// at its first write there and rebuilt in one part from then on.
    var buildsStreamByStream: Bool { get }
}

extension Projection {
    /// Records are applied in log order.
    public var buildsStreamByStream: Bool { false }
}

extension Projection where BatchState == Void {
    /// Nothing is kept between records.
    public func makeBatchState() {}
    /// Nothing is kept back.
    ///
    /// - Parameters:
    ///   - batch: nothing.
    ///   - state: the generation's databases (unused).
    /// - Throws: never.
    public func finishBatch(_ batch: inout Void, state: ProjectionState) throws {}
}

/// Read and write access to one generation of a projection's databases, inside one transaction.
public struct ProjectionState {
    let transaction: Transaction
    let databases: [String: Database]
    /// Set for the second part of a chunk read on the lane thread (a read transaction): a write
    /// there is counted and throws ``ReadOnlyState``, and the part is dropped (its streams are
    /// applied again, on the writer's thread), even when the projection caught the error.
    var refusedWrites: RefusedWrites?
    /// Set by the runner for a batch of the serving generation: counts the writes, so that a batch
    /// that wrote nothing need not commit (see `ProjectionStore.quietCheckpointSpan`).
    var writes: WriteCount?

    /// A write to a read-only state (the second part of a stream-by-stream chunk).
    struct ReadOnlyState: Error {}

    /// The writes a read-only state refused (only the lane thread changes it).
    final class RefusedWrites {
        var count = 0
    }

    /// The writes of one batch (only the store's writer thread changes it).
    final class WriteCount {
        var count = 0
    }

    /// Counts and refuses a write when the state is read-only; counts it otherwise.
    private func checkWritable() throws {
        writes?.count += 1
        guard let refusedWrites else { return }
        refusedWrites.count += 1
        throw ReadOnlyState()
    }

    func database(_ name: String) throws -> Database {
        guard let database = databases[name] else { throw ProjectionError.unknownDatabase(name) }
        return database
    }

    /// The value under `key` in the named database, copied.
    ///
    /// - Parameters:
    ///   - database: one of the projection's `databaseNames`.
    ///   - key: the key.
    /// - Returns: a copy of the value, or nil when the key is absent.
    /// - Throws: ``ProjectionError`` `.unknownDatabase` for a name the projection does not declare, or
    ///   the storage's error when the read fails.
    public func get(_ database: String, key: [UInt8]) throws -> [UInt8]? {
        try transaction.get(try self.database(database), key: key)
    }

    /// Stores `value` under `key`.
    ///
    /// - Parameters:
    ///   - database: one of the projection's `databaseNames`.
    ///   - key: the key.
    ///   - value: the value.
    /// - Throws: ``ProjectionError`` `.unknownDatabase` for a name the projection does not declare, an
    ///   error of the store's own while the state is read-only (the second part of a stream-by-stream
    ///   chunk, which the store then applies again), or the storage's error when the write fails.
    public func put(_ database: String, key: [UInt8], value: [UInt8]) throws {
        try checkWritable()
        try transaction.put(try self.database(database), key: key, value: value)
    }

    /// Removes `key`; false when it was not there.
    ///
    /// - Parameters:
    ///   - database: one of the projection's `databaseNames`.
    ///   - key: the key.
    /// - Returns: true when the key was there.
    /// - Throws: ``ProjectionError`` `.unknownDatabase` for a name the projection does not declare, an
    ///   error of the store's own while the state is read-only, or the storage's error when the write
    ///   fails.
    @discardableResult
    public func delete(_ database: String, key: [UInt8]) throws -> Bool {
        try checkWritable()
        return try transaction.delete(try self.database(database), key: key)
    }

    /// Calls `body` with each entry of the named database in key order, from the first key at or
    /// after `start` (the beginning when nil), until it returns false. The buffers are valid only
    /// during the call.
    ///
    /// - Parameters:
    ///   - database: one of the projection's `databaseNames`.
    ///   - start: the first key to visit, or nil for the first key of the database.
    ///   - body: called with each key and value; it returns false to stop.
    /// - Throws: `body`'s error, ``ProjectionError`` `.unknownDatabase` for a name the projection does
    ///   not declare, or the storage's error when the read fails.
    public func forEach(
        _ database: String, from start: [UInt8]? = nil, _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try transaction.withCursor(try self.database(database)) { cursor in
            var entry = try start.map { try cursor.seek(atOrAfter: $0) } ?? cursor.first()
            while let current = entry, try body(current.key, current.value) {
                entry = try cursor.next()
            }
        }
    }
}

/// What can go wrong with projections.
public enum ProjectionError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownProjection(String)
    case unknownDatabase(String)
    case duplicateName(String)
    /// The projection threw while applying the record at `position`; it is stopped there.
    case failed(projection: String, position: UInt64, reason: String)
    case closed
    /// A read-your-writes wait gave up: the projection had not applied `position` in time
    /// (`lastError` is the runner's last storage failure, if it had one).
    case timedOut(projection: String, position: UInt64, lastError: String?)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .unknownProjection(name): "no projection named \"\(name)\""
        case let .unknownDatabase(name): "the projection has no database named \"\(name)\" (declare it in databaseNames)"
        case let .duplicateName(name): "two projections are named \"\(name)\""
        case let .failed(projection, position, reason): "projection \"\(projection)\" stopped at position \(position): \(reason)"
        case .closed: "the projection store is closed"
        case let .timedOut(projection, position, lastError):
            "projection \"\(projection)\" has not applied position \(position) in time" + (lastError.map { " (last storage error: \($0))" } ?? "")
        }
    }
}

/// The state of one projection, for status displays and tests.
public struct ProjectionStatus: Sendable, Equatable {
    /// The projection's name.
    public let name: String
    /// The generation that serves reads.
    public let generation: UInt32
    /// The last log position applied to the serving generation.
    public let checkpoint: UInt64
    /// How many log records the serving generation has still to apply.
    public let lag: UInt64
    /// A generation being rebuilt beside it, and its checkpoint.
    public let rebuilding: (generation: UInt32, checkpoint: UInt64)?
    /// Why it stopped, if it did.
    public let failure: String?
    /// The runner's current storage failure (it retries), if any.
    public var storageError: String? = nil
    /// Since when the runner has failed to advance (nil while it advances).
    public var storageErrorSince: Date? = nil
    /// When the serving generation last applied a batch in this process (its open, before any).
    public var lastAdvanced: Date? = nil

    /// Whether both sides are equal.
    public static func == (lhs: ProjectionStatus, rhs: ProjectionStatus) -> Bool {
        lhs.name == rhs.name && lhs.generation == rhs.generation && lhs.checkpoint == rhs.checkpoint && lhs.lag == rhs.lag
            && lhs.rebuilding?.generation == rhs.rebuilding?.generation && lhs.rebuilding?.checkpoint == rhs.rebuilding?.checkpoint
            && lhs.failure == rhs.failure && lhs.storageError == rhs.storageError
    }
}
