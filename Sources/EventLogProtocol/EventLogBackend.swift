//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A durable, append-only log of events grouped in streams: what the account store and its
/// projections need of a storage backend. The LMDB log (`EventLog`) is the embedded one; a backend
/// of your own passes the conformance kit in `SpeziAccountTesting` (`LogConformance`).
///
/// What every backend guarantees:
/// - positions are 1, 2, 3, … without gaps, assigned in commit order: a reader never sees position
///   n + 1 before n;
/// - an append carries an expected stream version, and a mismatch writes nothing
///   (``EventLogError/wrongExpectedVersion(stream:expected:actual:)``);
/// - event ids are unique: an append whose ids are all in the log already writes nothing and
///   answers with the original positions (a retry after a timeout never duplicates an event);
/// - claims are unique keys held by one stream at a time, taken and released in the append's own
///   transaction;
/// - timestamps never decrease along positions;
/// - a subscription delivers every record after its starting point exactly once, in order, first
///   those already committed, then live ones;
/// - with ``Durability/durable`` an acknowledged append survives a crash or a power cut.
///
/// Every method may suspend; none blocks a thread of Swift's cooperative pool for storage I/O.
/// The reading half is ``EventLogReader``: what projections and auditors need, and all an
/// `AccountStore` hands out of its log.
public protocol EventLogBackend: EventLogReader {
    /// Appends `events` to the stream in one transaction, after checking `expectedVersion`, taking
    /// `claims` and giving up `releases`; returns after the commit (flushed, when durable).
    ///
    /// - Parameters:
    ///   - events: the events, in order (at least one).
    ///   - streamID: the stream they go to (not empty, without NUL bytes, within the backend's length limit).
    ///   - expectedVersion: the check the stream must pass first.
    ///   - claims: unique keys the stream takes.
    ///   - releases: keys the stream gives up.
    /// - Returns: the events' positions, the stream's new version, and whether the append was a
    ///   retry of one already in the log.
    /// - Throws: ``EventLogError/wrongExpectedVersion(stream:expected:actual:)`` when the stream fails
    ///   `expectedVersion`, `EventLogError.claimTaken` when another stream holds a claim,
    ///   `.duplicateEventID` when some but not all of the ids are in the log already,
    ///   `.invalidStreamID` or `.invalidEvent` for an append that breaks a limit, `.closed` after
    ///   ``close()``, `.diskFull` or `.storage` when the storage fails. Nothing is written then.
    func append(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>
    ) async throws -> AppendResult

    /// Appends events that keep the time they were first recorded with (an import, a move from
    /// another backend): each is stamped with its own `timestamp` instead of the log's clock, no
    /// earlier than the log's last record. Everything else is as in
    /// ``append(_:to:expectedVersion:claims:releases:)``.
    ///
    /// - Parameters:
    ///   - events: the events, in order, each with the time it was first recorded.
    ///   - streamID: the stream they go to.
    ///   - expectedVersion: the check the stream must pass first.
    ///   - claims: unique keys the stream takes.
    ///   - releases: keys the stream gives up.
    /// - Returns: the events' positions, the stream's new version, and whether the append was a retry.
    /// - Throws: what ``append(_:to:expectedVersion:claims:releases:)`` throws; nothing is written then.
    func appendImported(
        _ events: [(event: ProposedEvent, timestamp: Date)], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>,
        releases: Set<String>
    ) async throws -> AppendResult

    /// Appends to several streams with one call: committed in this order, each checked on its own
    /// (one that fails writes nothing and holds back none of the others); the outcomes come back in
    /// the same order. A backend may share commits among them (the default appends one by one).
    ///
    /// - Parameter appends: one append per element; a stream may appear more than once.
    /// - Returns: each append's outcome, in the order given: its ``AppendResult``, or the error
    ///   ``append(_:to:expectedVersion:claims:releases:)`` would have thrown for it.
    func appendBatch(_ appends: [StreamAppend]) async -> [Result<AppendResult, any Error>]

    /// Flushes what the relaxed mode has not flushed yet.
    ///
    /// - Throws: `EventLogError.closed` after ``close()``, or `.storage` when the flush fails.
    func sync() async throws
    /// Finishes queued appends, ends subscriptions and releases the storage. Idempotent.
    func close() async
    /// Stores `value` under `name` unless a value is there; returns the value stored now.
    ///
    /// - Parameters:
    ///   - name: the value's name, 1–200 bytes.
    ///   - value: the value to store when none is there.
    /// - Returns: `value`, or the value another writer stored first.
    /// - Throws: `EventLogError.invalidEvent` for a name of the wrong length, `.closed` after
    ///   ``close()``, `.diskFull` or `.storage` when the write fails.
    func setMetadataIfAbsent(_ name: String, _ value: [UInt8]) async throws -> [UInt8]
}

/// The reading half of an event log: records by position and by stream, claims, subscriptions,
/// verification and statistics. Nothing here changes the log.
public protocol EventLogReader: AnyObject, Sendable {
    /// Where the log lives (a folder, a URL without its password), for messages.
    var location: String { get }
    /// The stream that holds a claimed key, or nil.
    ///
    /// - Parameter claim: the unique key.
    /// - Returns: the id of the stream that holds it, or nil when no stream does.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func claimOwner(_ claim: String) async throws -> String?
    /// The position of the last record; 0 for an empty log.
    ///
    /// - Returns: the position of the newest committed record, 0 when there is none.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func lastPosition() async throws -> UInt64
    /// The record at `position`, or nil.
    ///
    /// - Parameter position: the record's position (1 is the first).
    /// - Returns: the record, or nil when no record has that position.
    /// - Throws: `EventLogError.corruptRecord` when the stored record fails its checks, or another
    ///   ``EventLogError`` when the log is closed or its storage fails.
    func record(at position: UInt64) async throws -> RecordedEvent?
    /// Up to `limit` records starting at `position`, forward or backward.
    ///
    /// - Parameters:
    ///   - position: where to start; forward, the first record at or after it; backward, the last
    ///     record at or before it.
    ///   - direction: whether to read toward newer or older records.
    ///   - limit: the most records to return.
    /// - Returns: the records, in the order read (empty past the end).
    /// - Throws: `EventLogError.corruptRecord` when a stored record fails its checks, or another
    ///   ``EventLogError`` when the log is closed or its storage fails.
    func read(from position: UInt64, direction: ReadDirection, limit: Int) async throws -> [RecordedEvent]
    /// Up to `limit` events of one stream, from stream version `version` on.
    ///
    /// - Parameters:
    ///   - streamID: the stream.
    ///   - version: the first stream version to return (1 is the stream's first event).
    ///   - limit: the most events to return.
    /// - Returns: the stream's events, oldest first (empty for a stream that does not exist).
    /// - Throws: `EventLogError.invalidStreamID` for an id no stream can have, `.corruptRecord` when a
    ///   stored record fails its checks, or another ``EventLogError`` when the storage fails.
    func readStream(_ streamID: String, from version: UInt64, limit: Int) async throws -> [RecordedEvent]
    /// The stream's current version, or nil when it does not exist.
    ///
    /// - Parameter streamID: the stream.
    /// - Returns: the version of its last event, or nil when it has none.
    /// - Throws: `EventLogError.invalidStreamID` for an id no stream can have, or another
    ///   ``EventLogError`` when the log is closed or its storage fails.
    func streamVersion(_ streamID: String) async throws -> UInt64?
    /// Every record after `position` (of one stream, or of all), catch-up then live, in batches of
    /// at most `batchSize`, pulled only as fast as the consumer asks.
    ///
    /// - Parameters:
    ///   - position: the last position the subscriber has seen (0: from the first record).
    ///   - streamID: the one stream to deliver, or nil for the whole log.
    ///   - batchSize: the most records in one batch.
    /// - Returns: the batches, as an asynchronous sequence that ends when the log closes or the task
    ///   is cancelled and throws when a read fails.
    func subscribeBatches(after position: UInt64, stream streamID: String?, batchSize: Int) -> RecordBatches
    /// Returns once a record past `position` is committed (or the log closed).
    ///
    /// - Parameter position: the position the caller has already seen.
    func waitForCommit(beyond position: UInt64) async
    /// Checks every record, the hash chain, gap-free positions and the indexes, in batches.
    ///
    /// - Parameters:
    ///   - batchSize: the records checked per read.
    ///   - progress: called after each batch with the records checked so far, or nil.
    /// - Returns: how far the check got, the chain hash of the last intact record, and the first
    ///   problem found (nil when the log is intact).
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails; damage is reported in
    ///   the returned report, not thrown.
    func verify(batchSize: Int, progress: (@Sendable (VerificationProgress) -> Void)?) async throws -> VerificationReport
    /// Counts and sizes.
    ///
    /// - Returns: the number of records, the last position and the storage's sizes.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func statistics() async throws -> LogStatistics
    /// A value the application stored with the log under `name`, or nil.
    ///
    /// - Parameter name: the value's name.
    /// - Returns: the stored bytes, or nil when nothing is stored under `name`.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func metadata(_ name: String) async throws -> [UInt8]?
}

extension EventLogBackend {
    /// One append after the other.
    ///
    /// - Parameter appends: one append per element.
    /// - Returns: each append's outcome, in the order given.
    public func appendBatch(_ appends: [StreamAppend]) async -> [Result<AppendResult, any Error>] {
        var outcomes: [Result<AppendResult, any Error>] = []
        for append in appends {
            do {
                if let timestamps = append.timestamps {
                    outcomes.append(
                        .success(
                            try await appendImported(
                                Array(zip(append.events, timestamps)).map { (event: $0.0, timestamp: $0.1) }, to: append.streamID,
                                expectedVersion: append.expectedVersion, claims: append.claims, releases: append.releases)))
                } else {
                    outcomes.append(
                        .success(
                            try await self.append(
                                append.events, to: append.streamID, expectedVersion: append.expectedVersion, claims: append.claims,
                                releases: append.releases)))
                }
            } catch {
                outcomes.append(.failure(error))
            }
        }
        return outcomes
    }

    /// Appends `events` to the stream (no claims taken or released).
    ///
    /// - Parameters:
    ///   - events: the events, in order.
    ///   - streamID: the stream they go to.
    ///   - expectedVersion: the check the stream must pass first (default: none).
    /// - Returns: the events' positions, the stream's new version, and whether the append was a retry.
    /// - Throws: what ``append(_:to:expectedVersion:claims:releases:)`` throws.
    public func append(_ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion = .any) async throws -> AppendResult {
        try await append(events, to: streamID, expectedVersion: expectedVersion, claims: [], releases: [])
    }

}

extension EventLogReader {
    /// Up to `limit` records from `position` on, oldest first.
    ///
    /// - Parameters:
    ///   - position: the first position to read (1 is the first record).
    ///   - limit: the most records to return.
    /// - Returns: the records, oldest first.
    /// - Throws: what ``read(from:direction:limit:)`` throws.
    public func read(from position: UInt64 = 1, limit: Int = 1_000) async throws -> [RecordedEvent] {
        try await read(from: position, direction: .forward, limit: limit)
    }

    /// The stream from version `version` on (default: all of it), oldest first.
    ///
    /// - Parameters:
    ///   - streamID: the stream.
    ///   - version: the first stream version to return.
    /// - Returns: the stream's events from `version` on, oldest first.
    /// - Throws: what ``readStream(_:from:limit:)`` throws.
    public func readStream(_ streamID: String, from version: UInt64 = 1) async throws -> [RecordedEvent] {
        try await readStream(streamID, from: version, limit: .max)
    }

    /// Checks the whole log, 4,096 records per batch, reporting to `progress`.
    ///
    /// - Parameter progress: called after each batch with the records checked so far, or nil.
    /// - Returns: how far the check got and the first problem found (nil when the log is intact).
    /// - Throws: what ``verify(batchSize:progress:)`` throws.
    public func verify(progress: (@Sendable (VerificationProgress) -> Void)? = nil) async throws -> VerificationReport {
        try await verify(batchSize: 4_096, progress: progress)
    }

    /// Every record after `position`, one at a time (see ``subscribeBatches(after:stream:batchSize:)``).
    ///
    /// - Parameters:
    ///   - position: the last position the subscriber has seen (0: from the first record).
    ///   - streamID: the one stream to deliver, or nil for the whole log.
    ///   - batchSize: the most records read at once.
    /// - Returns: the records, as an asynchronous sequence.
    public func subscribeRecords(after position: UInt64 = 0, stream streamID: String? = nil, batchSize: Int = 256) -> EventSubscription {
        EventSubscription(batches: subscribeBatches(after: position, stream: streamID, batchSize: batchSize))
    }
}

/// Batches of records from a subscription, as an `AsyncSequence`: a backend supplies, for each
/// iterator, a function that returns the next batch (waiting for commits when caught up) and nil
/// once the log is closed or the task cancelled.
public struct RecordBatches: AsyncSequence, Sendable {
    /// The type of the elements the sequence delivers.
    public typealias Element = [RecordedEvent]

    private let makeNext: @Sendable () -> @Sendable () async throws -> [RecordedEvent]?

    /// A sequence whose iterators each call `makeNext` once for their own reader.
    ///
    /// - Parameter makeNext: called once per iterator; the function it returns gives the next batch,
    ///   or nil when the subscription ends.
    public init(_ makeNext: @escaping @Sendable () -> @Sendable () async throws -> [RecordedEvent]?) {
        self.makeNext = makeNext
    }

    /// Starts reading; each iterator reads on its own.
    public func makeAsyncIterator() -> Iterator {
        Iterator(pull: makeNext())
    }

    /// Pulls the next batch.
    public struct Iterator: AsyncIteratorProtocol {
        let pull: @Sendable () async throws -> [RecordedEvent]?

        /// The next batch; `nil` when the sequence ended.
        public mutating func next() async throws -> [RecordedEvent]? {
            if Task.isCancelled { return nil }
            return try await pull()
        }
    }
}

/// The records of a subscription one at a time, as an `AsyncSequence`.
public struct EventSubscription: AsyncSequence, Sendable {
    /// The type of the elements the sequence delivers.
    public typealias Element = RecordedEvent

    let batches: RecordBatches

    /// The records of `batches`, in order.
    ///
    /// - Parameter batches: the batches to hand out record by record.
    public init(batches: RecordBatches) {
        self.batches = batches
    }

    /// Starts reading; each iterator reads on its own.
    public func makeAsyncIterator() -> Iterator {
        Iterator(batches: batches.makeAsyncIterator())
    }

    /// Hands out the records of one batch, then pulls the next.
    public struct Iterator: AsyncIteratorProtocol {
        var batches: RecordBatches.Iterator
        var buffer: [RecordedEvent] = []
        var index = 0

        /// The next element; `nil` when the sequence ended.
        public mutating func next() async throws -> RecordedEvent? {
            while index >= buffer.count {
                guard let batch = try await batches.next() else { return nil }
                buffer = batch
                index = 0
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}

/// One stream's part of ``EventLogBackend/appendBatch(_:)``.
public struct StreamAppend: Sendable {
    /// The stream.
    public var streamID: String
    /// Its events, in order.
    public var events: [ProposedEvent]
    /// For imported events: each one's own time (else the log's clock stamps them).
    public var timestamps: [Date]?
    /// The stream version the append expects.
    public var expectedVersion: ExpectedVersion
    /// Unique keys the stream takes.
    public var claims: Set<String>
    /// Keys the stream gives up.
    public var releases: Set<String>

    /// One stream's append.
    ///
    /// - Parameters:
    ///   - streamID: the stream.
    ///   - events: its events, in order.
    ///   - timestamps: for imported events, one time per event; nil to stamp them with the log's clock.
    ///   - expectedVersion: the check the stream must pass first.
    ///   - claims: unique keys the stream takes.
    ///   - releases: keys the stream gives up.
    public init(
        streamID: String, events: [ProposedEvent], timestamps: [Date]? = nil, expectedVersion: ExpectedVersion = .any,
        claims: Set<String> = [], releases: Set<String> = []
    ) {
        self.streamID = streamID
        self.events = events
        self.timestamps = timestamps
        self.expectedVersion = expectedVersion
        self.claims = claims
        self.releases = releases
    }
}
