//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

internal import CChecksum
import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

/// A checked record read in place, without copying: its fields are decoded only when asked for,
/// and its payload points into LMDB's map. Valid only inside the ``EventLog/scan(from:batchSize:_:)``
/// callback that received it.
public struct RecordView: LogRecord {
    let bytes: UnsafeRawBufferPointer
    /// Offsets found while checking the record.
    let streamIDRange: Range<Int>
    let typeRange: Range<Int>
    let metadataRange: Range<Int>
    let payloadRange: Range<Int>

    /// Its position in the log.
    public let position: UInt64

    /// Checks the checksum and the layout; every reader of records goes through here.
    init(_ record: UnsafeRawBufferPointer, position: UInt64, path: borrowing String) throws(EventLogError) {
        // The check itself makes no message and touches no string: only a flawed record (rare)
        // pays for explaining itself, out of line.
        let parts: Parts
        do {
            parts = try Self.parts(of: record, position: position)
        } catch {
            throw Self.explain(error, record: record, position: position, path: copy path)
        }
        self.bytes = record
        self.position = position
        self.streamIDRange = parts.stream
        self.typeRange = parts.type
        self.metadataRange = parts.metadata
        self.payloadRange = parts.payload
    }

    /// Where a record's variable fields are.
    private struct Parts {
        var stream: Range<Int>
        var type: Range<Int>
        var metadata: Range<Int>
        var payload: Range<Int>
    }

    /// What is wrong with a record that fails its checks.
    private enum Flaw: Error {
        case tooShort, checksum, layout, position, header, metadata, payload, trailing
    }

    /// Checks `record` (checksum, layout version, position, structure) and finds its parts.
    @inline(__always)
    private static func parts(of record: UnsafeRawBufferPointer, position: UInt64) throws(Flaw) -> Parts {
        guard record.count >= RecordFormat.fixedSize + 2 + 2 + 2 + 4 else { throw .tooShort }
        let stored = BigEndian.uint32(record)
        guard stored == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: record[RecordFormat.Offset.chainHash...])) else { throw .checksum }
        guard record[RecordFormat.Offset.layout] == RecordFormat.layoutVersion else { throw .layout }
        guard BigEndian.uint64(record, at: RecordFormat.Offset.position) == position else { throw .position }
        // The variable part, read with plain loads (this runs for every record a reader sees).
        // `offset` never passes `count` and lengths are at most 2^32, so the arithmetic cannot
        // overflow and goes unchecked.
        let count = record.count
        var offset = RecordFormat.fixedSize
        @inline(__always) func u16() -> Int? {
            guard count &- offset >= 2 else { return nil }
            let value = Int(UInt16(bigEndian: record.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
            offset &+= 2
            return value
        }
        @inline(__always) func skip(_ length: Int) -> Range<Int>? {
            guard count &- offset >= length else { return nil }
            let start = offset
            offset &+= length
            return Range(uncheckedBounds: (start, offset))
        }
        guard let streamLength = u16(), let stream = skip(streamLength), let typeLength = u16(), let type = skip(typeLength) else {
            throw .header
        }
        let metadataStart = offset
        guard let pairs = u16() else { throw .header }
        for _ in 0..<pairs {
            // A pair is a key length, the key, a value length and the value: three bound checks.
            guard let keyLength = u16(), count &- offset >= keyLength &+ 2 else { throw .metadata }
            offset &+= keyLength
            guard let valueLength = u16(), skip(valueLength) != nil else { throw .metadata }
        }
        let metadataEnd = offset
        guard count &- offset >= 4 else { throw .payload }
        let payloadLength = Int(UInt32(bigEndian: record.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        offset &+= 4
        guard let payload = skip(payloadLength) else { throw .payload }
        guard offset == count else { throw .trailing }
        return Parts(stream: stream, type: type, metadata: Range(uncheckedBounds: (metadataStart, metadataEnd)), payload: payload)
    }

    /// The error for a record that failed its checks, saying what is wrong with it.
    @inline(never)
    private static func explain(_ flaw: Flaw, record: UnsafeRawBufferPointer, position: UInt64, path: String) -> EventLogError {
        let reason =
            switch flaw {
            case .tooShort: "the record has \(record.count) bytes, fewer than the smallest possible record"
            case .checksum:
                String(
                    format: "checksum mismatch (stored %08x, computed %08x)", BigEndian.uint32(record),
                    CRC32C.checksum(UnsafeRawBufferPointer(rebasing: record[RecordFormat.Offset.chainHash...])))
            case .layout: "unknown record layout \(record[RecordFormat.Offset.layout])"
            case .position: "the record says position \(BigEndian.uint64(record, at: RecordFormat.Offset.position)) but is stored under \(position)"
            case .header: "the record ends inside its header"
            case .metadata: "the record ends inside its metadata"
            case .payload: "the record ends inside its payload"
            case .trailing: "unexpected bytes after the payload"
            }
        return .corruptRecord(position: position, reason: reason, path: path)
    }

    /// The stream version.
    public var streamVersion: UInt64 { BigEndian.uint64(bytes, at: RecordFormat.Offset.streamVersion) }
    /// The schema version of the payload.
    public var schemaVersion: UInt32 { BigEndian.uint32(bytes, at: RecordFormat.Offset.schemaVersion) }
    /// The commit time.
    public var timestamp: Date {
        Date(timeIntervalSince1970: Double(Int64(bitPattern: BigEndian.uint64(bytes, at: RecordFormat.Offset.timestamp))) / 1_000_000)
    }
    /// The event id.
    public var eventID: UUID {
        var reader = ByteReader(buffer: bytes, offset: RecordFormat.Offset.eventID)
        return reader.uuid()!
    }
    /// The stream id's bytes, in place.
    public var streamIDBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[streamIDRange]) }
    /// The stream id.
    public var streamID: String { String(decoding: streamIDBytes, as: UTF8.self) }
    /// The event type's bytes, in place (compare with `elementsEqual("name".utf8)` to avoid a String).
    public var typeBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[typeRange]) }
    /// The event type.
    public var type: String { String(decoding: typeBytes, as: UTF8.self) }
    /// The payload, in place: copy what you keep.
    public var payload: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[payloadRange]) }
    /// The chain hash.
    public var hash: ChainHash { RecordFormat.storedHash(bytes) }

    /// The metadata (its structure was checked by `init`).
    public var metadata: EventMetadata {
        var metadata = EventMetadata()
        var reader = ByteReader(buffer: bytes, offset: metadataRange.lowerBound)
        let pairs = reader.u16()!
        for _ in 0..<pairs {
            let key = reader.slice(count: Int(reader.u16()!))!
            let value = reader.string16()!
            // The reserved keys are matched on their bytes: no String is made for them.
            if key.elementsEqual("actor".utf8) {
                metadata.actor = value
            } else if key.elementsEqual("correlation-id".utf8) {
                metadata.correlationID = value
            } else if key.elementsEqual("causation-id".utf8) {
                metadata.causationID = value
            } else {
                metadata.extra[String(decoding: key, as: UTF8.self)] = value
            }
        }
        return metadata
    }

    /// Calls `body` with the payload in place.
    ///
    /// - Parameter body: reads the payload; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withPayload<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(payload)
    }

    /// Calls `body` with the stream id's bytes in place.
    ///
    /// - Parameter body: reads the stream id; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withStreamIDBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(streamIDBytes)
    }

    /// Calls `body` with the type's bytes in place.
    ///
    /// - Parameter body: reads the type name; the pointer must not escape the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withTypeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(typeBytes)
    }

    /// Compares the type's bytes in place (no String is made).
    ///
    /// - Parameter name: the type name to compare with.
    /// - Returns: true when the record's type is `name`.
    public func hasType(_ name: String) -> Bool {
        typeBytes.elementsEqual(name.utf8)
    }

    /// The whole record, decoded and copied.
    ///
    /// - Returns: a `RecordedEvent` that stays valid after the read transaction ends.
    public func decoded() -> RecordedEvent {
        RecordedEvent(
            position: position, streamID: streamID, streamVersion: streamVersion, eventID: eventID, type: type,
            schemaVersion: schemaVersion, timestamp: timestamp, metadata: metadata, payload: Data(payload), hash: hash)
    }
}

extension ByteReader {
    /// Skips `count` bytes and returns their offsets.
    mutating func range(count: Int) -> Range<Int>? {
        guard count >= 0, buffer.count - offset >= count else { return nil }
        defer { offset += count }
        return offset..<offset + count
    }
}

extension EventLog: InPlaceScanning {
    /// Calls `body` with every record from `position` on, checked but not copied, `batchSize`
    /// records per short read transaction. Return false to stop. The fastest way to replay: decode
    /// what you need straight from ``RecordView/payload``.
    ///
    /// - Parameters:
    ///   - position: the first position to hand out (1 is the first record).
    ///   - batchSize: the records read per read transaction.
    ///   - body: called with each record in order; it returns false to stop. The view is valid only
    ///     during the call.
    /// - Throws: `body`'s error, `EventLogError.corruptRecord` when a record fails its checks,
    ///   `.closed` after `close()`, or `.storage` when the read fails.
    public func scan(from position: UInt64 = 1, batchSize: Int = 4_096, _ body: (RecordView) throws -> Bool) throws {
        var next = max(position, 1)
        while true {
            let (count, stop): (Int, Bool) = try reading { txn in
                try txn.withCursor(databases.records) { cursor in
                    var count = 0
                    var entry = try cursor.seek(atOrAfter: BigEndian.bytes(next))
                    while let current = entry, count < max(batchSize, 1) {
                        // The next record is found first and its bytes requested while this one
                        // is checked and handed out: a scan waits on memory more than on work.
                        entry = try cursor.next()
                        if let ahead = entry { cchecksum_prefetch(ahead.value.baseAddress, ahead.value.count) }
                        let at = BigEndian.uint64(current.key)
                        let view = try RecordView(current.value, position: at, path: path)
                        next = at + 1
                        count += 1
                        if try !body(view) { return (count, true) }
                    }
                    return (count, false)
                }
            }
            if stop || count == 0 { return }
        }
    }
}

extension RecordFormat {
    /// Checks the CRC and the structure, then decodes. `position` is the record's key.
    static func decode(_ record: UnsafeRawBufferPointer, position: UInt64, path: String) throws(EventLogError) -> RecordedEvent {
        try RecordView(record, position: position, path: path).decoded()
    }
}
