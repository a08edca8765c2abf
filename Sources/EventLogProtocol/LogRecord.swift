//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A stored record as a reader sees it: a copied ``RecordedEvent``, or a backend's view of a
/// record in place (no copy) that is valid only during the call that hands it out. Projections
/// fold records through this protocol, so the same code replays every backend.
public protocol LogRecord {
    /// Its place in the whole log.
    var position: UInt64 { get }
    /// The stream it belongs to.
    var streamID: String { get }
    /// Its place in the stream.
    var streamVersion: UInt64 { get }
    /// The id it was appended with.
    var eventID: UUID { get }
    /// The event type name.
    var type: String { get }
    /// The schema version of the payload.
    var schemaVersion: UInt32 { get }
    /// When the log committed it.
    var timestamp: Date { get }
    /// Actor, correlation and causation ids, extra pairs.
    var metadata: EventMetadata { get }
    /// The chain hash up to and including this record.
    var hash: ChainHash { get }
    /// Calls `body` with the payload's bytes (valid only during the call).
    ///
    /// - Parameter body: reads the payload; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    func withPayload<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    /// Calls `body` with the stream id's UTF-8 bytes (valid only during the call).
    ///
    /// - Parameter body: reads the stream id; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    func withStreamIDBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    /// Whether the event type is `name`, without making a String where the backend can avoid it.
    ///
    /// - Parameter name: the type name to compare with.
    /// - Returns: true when the record's type is `name`.
    func hasType(_ name: String) -> Bool
    /// Calls `body` with the event type's UTF-8 bytes (valid only during the call), without making
    /// a String where the backend can avoid it.
    ///
    /// - Parameter body: reads the type name; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    func withTypeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
}

extension LogRecord {
    /// Compares the type's String.
    ///
    /// - Parameter name: the type name to compare with.
    /// - Returns: true when the record's type is `name`.
    public func hasType(_ name: String) -> Bool { type == name }

    /// Calls `body` with the bytes of the type's String.
    ///
    /// - Parameter body: reads the type name; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withTypeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var type = type
        return try type.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

extension RecordedEvent: LogRecord {
    /// Calls `body` with the copied payload.
    ///
    /// - Parameter body: reads the payload; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withPayload<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try payload.withUnsafeBytes(body)
    }

    /// Calls `body` with the stream id's bytes.
    ///
    /// - Parameter body: reads the stream id; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withStreamIDBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var streamID = streamID
        return try streamID.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

/// A backend that can also hand its records to a synchronous reader in place, without copying them
/// (the LMDB log's zero-copy scan). Replays use it where a backend offers it and fall back to
/// ``EventLogReader/read(from:direction:limit:)`` batches elsewhere.
public protocol InPlaceScanning: EventLogBackend {
    /// The backend's view of one record.
    associatedtype Record: LogRecord
    /// Calls `body` with every record from `position` on, in order, checked but not copied, until
    /// it returns false or the log ends. Runs on the caller's thread: call it from a thread of
    /// your own, not from Swift's cooperative pool, for long replays.
    ///
    /// - Parameters:
    ///   - position: the first position to hand out (1 is the first record).
    ///   - batchSize: the records read per read transaction.
    ///   - body: called with each record in order; it returns false to stop. The record is valid only
    ///     during the call.
    /// - Throws: `body`'s error, `EventLogError.corruptRecord` when a record fails its checks, or
    ///   another ``EventLogError`` when the storage fails.
    func scan(from position: UInt64, batchSize: Int, _ body: (Record) throws -> Bool) throws
}

/// An in-place scanning backend that can also hand out its records stream by stream (each
/// stream's records together, in version order; the streams in the order of their ids' bytes).
/// A projection whose state for a stream depends on that stream's records alone can be built this
/// way, each stream's state computed once and stored once, in key order.
public protocol StreamOrderedScanning: InPlaceScanning {
    /// The last position a stream-ordered scan can reach (records after it are read by position).
    ///
    /// - Returns: the last position the streams' index covers.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func streamOrderLimit() throws -> UInt64
    /// Calls `body` with every record up to position `through`, stream by stream, from the first
    /// stream whose id's bytes sort after `streamAfter` (from the first stream when nil), until
    /// it returns false (before the record it was given) or the streams end.
    ///
    /// - Parameters:
    ///   - streamAfter: the id bytes of the last stream already read, or nil to start with the first.
    ///   - through: the last position to include.
    ///   - batchSize: the records read per read transaction.
    ///   - body: called with each record; it returns false to stop. The record is valid only during
    ///     the call.
    /// - Throws: `body`'s error, `EventLogError.corruptRecord` when a record fails its checks, or
    ///   another ``EventLogError`` when the storage fails.
    func scanStreams(after streamAfter: [UInt8]?, through: UInt64, batchSize: Int, _ body: (Record) throws -> Bool) throws
    /// Where a stream-ordered scan after `streamAfter` (records up to `through`) may be cut in
    /// two parts of about `records` records and the rest: the id of the stream that holds its
    /// `records`-th record, or nil when the scan holds fewer than `records` records. The first
    /// part ends with that stream; a scan after it reads the second. A rebuild reads the two parts
    /// on two threads at once.
    ///
    /// - Parameters:
    ///   - streamAfter: the id bytes of the last stream already read, or nil to start with the first.
    ///   - records: about how many records the first part should hold.
    ///   - through: the last position the scan includes.
    /// - Returns: the id bytes of the stream that ends the first part, or nil for no cut.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func streamSplit(after streamAfter: [UInt8]?, records: Int, through: UInt64) throws -> [UInt8]?
}

extension StreamOrderedScanning {
    /// No place to cut: the scan is read in one part.
    ///
    /// - Parameters:
    ///   - streamAfter: ignored.
    ///   - records: ignored.
    ///   - through: ignored.
    /// - Returns: nil.
    /// - Throws: never.
    public func streamSplit(after streamAfter: [UInt8]?, records: Int, through: UInt64) throws -> [UInt8]? { nil }
}
