//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import EventLogProtocol
import Foundation

/// The byte layout of one record (format version 1); FORMAT.md describes it for other readers.
///
/// ```
/// 0   u32  CRC-32C of bytes 4..<end
/// 4   32   chain hash = SHA-256(previous chain hash || bytes 36..<end)
/// 36  u8   record layout (1)        37  u8   flags (0)
/// 38  u64  position                 46  u64  stream version
/// 54  i64  timestamp (µs since 1970-01-01T00:00:00Z)
/// 62  16   event id                 78  u32  schema version
/// 82  u16  stream id length, bytes  ..  u16  type length, bytes
/// ..  u16  metadata pair count, then per pair u16 key length, key, u16 value length, value
/// ..  u32  payload length, payload
/// ```
/// All integers big-endian; strings UTF-8.
// Public (the module is no product, so this reaches no user) so that the constants, inlinable
// computed properties, inline into the readers: `package` members did not inline across modules
// here, and a `static let` read from another module is a call to its lazy initializer.
public enum RecordFormat {
    @inlinable public static var formatVersion: UInt32 { 1 }
    @inlinable public static var layoutVersion: UInt8 { 1 }
    /// Where each fixed field starts (see the table above).
    public enum Offset {
        @inlinable public static var checksum: Int { 0 }
        @inlinable public static var chainHash: Int { 4 }
        @inlinable public static var layout: Int { 36 }
        @inlinable public static var flags: Int { 37 }
        @inlinable public static var position: Int { 38 }
        @inlinable public static var streamVersion: Int { 46 }
        @inlinable public static var timestamp: Int { 54 }
        @inlinable public static var eventID: Int { 62 }
        @inlinable public static var schemaVersion: Int { 78 }
    }
    /// The first byte the chain hash covers (the layout byte).
    @inlinable public static var bodyOffset: Int { Offset.layout }
    @inlinable public static var fixedSize: Int { 82 }
    public static var maxStreamIDBytes: Int { String.maxStreamIDBytes }
    @inlinable public static var maxTypeBytes: Int { 255 }
    @inlinable public static var maxMetadataPairs: Int { 256 }
    @inlinable public static var maxMetadataFieldBytes: Int { Int(UInt16.max) }

    /// Checks a stream id: 1–400 bytes of UTF-8 without NUL (NUL separates it from the version in keys).
    package static func validate(streamID: String) throws(EventLogError) {
        if let reason = streamID.streamIDProblem { throw .invalidStreamID(streamID, reason: reason) }
    }

    /// Checks one event against the limits and returns its encoded size.
    package static func encodedSize(streamID: String, event: ProposedEvent, pairs: [(String, String)], maxPayload: Int) throws(EventLogError) -> Int {
        let typeCount = event.type.utf8.count
        if typeCount == 0 || typeCount > maxTypeBytes {
            throw .invalidEvent(reason: "event type \"\(event.type.prefix(80))\" must have 1–\(maxTypeBytes) bytes, has \(typeCount)")
        }
        if event.payload.count > maxPayload {
            throw .invalidEvent(reason: "payload of \(event.type) has \(event.payload.count) bytes; the limit is \(maxPayload)")
        }
        if pairs.count > maxMetadataPairs {
            throw .invalidEvent(reason: "metadata has \(pairs.count) entries; the limit is \(maxMetadataPairs)")
        }
        var size = fixedSize + 2 + streamID.utf8.count + 2 + typeCount + 2 + 4 + event.payload.count
        for (key, value) in pairs {
            let keyCount = key.utf8.count
            let valueCount = value.utf8.count
            if keyCount > maxMetadataFieldBytes || valueCount > maxMetadataFieldBytes {
                throw .invalidEvent(reason: "metadata entry \"\(key.prefix(40))\" is longer than \(maxMetadataFieldBytes) bytes")
            }
            size += 4 + keyCount + valueCount
        }
        return size
    }

    /// Writes a record into `buffer` (exactly `encodedSize` bytes), chaining it to `previous`.
    package static func write(
        into buffer: UnsafeMutableRawBufferPointer, position: UInt64, streamVersion: UInt64, timestampMicros: Int64,
        streamID: String, event: ProposedEvent, pairs: [(String, String)], previous: ChainHash
    ) -> ChainHash {
        writeTemplate(into: buffer, streamID: streamID, event: event, pairs: pairs)
        return seal(buffer, position: position, streamVersion: streamVersion, timestampMicros: timestampMicros, previous: previous)
    }

    /// Writes what a record holds before it has a place in the log (exactly `encodedSize` bytes):
    /// everything but its position, stream version, timestamp, chain hash and CRC, which
    /// ``seal(_:position:streamVersion:timestampMicros:previous:)`` adds. Appenders build these
    /// before they queue, so that the log's single writer only copies and seals them.
    package static func writeTemplate(into buffer: UnsafeMutableRawBufferPointer, streamID: String, event: ProposedEvent, pairs: [(String, String)]) {
        var writer = ByteWriter(buffer: buffer, offset: bodyOffset)
        writer.u8(layoutVersion)
        writer.u8(0)
        writer.offset = Offset.eventID
        writer.uuid(event.eventID)
        writer.u32(event.schemaVersion)
        writer.string16(streamID)
        writer.string16(event.type)
        writer.u16(UInt16(pairs.count))
        for (key, value) in pairs {
            writer.string16(key)
            writer.string16(value)
        }
        writer.u32(UInt32(event.payload.count))
        writer.data(event.payload)
        precondition(writer.offset == buffer.count, "record size mismatch")
    }

    /// Completes a record whose other fields are written (``writeTemplate(into:streamID:event:pairs:)``):
    /// stores its position, stream version and timestamp, then its chain hash over `previous` and
    /// its CRC. Returns the chain hash.
    package static func seal(
        _ buffer: UnsafeMutableRawBufferPointer, position: UInt64, streamVersion: UInt64, timestampMicros: Int64, previous: ChainHash
    ) -> ChainHash {
        buffer.storeBytes(of: position.bigEndian, toByteOffset: Offset.position, as: UInt64.self)
        buffer.storeBytes(of: streamVersion.bigEndian, toByteOffset: Offset.streamVersion, as: UInt64.self)
        buffer.storeBytes(of: UInt64(bitPattern: timestampMicros).bigEndian, toByteOffset: Offset.timestamp, as: UInt64.self)
        // The hash field comes right before the body: with the previous hash in it, the chain
        // hash's input (previous || body) is one contiguous range, hashed in one call.
        previous.withBytes { buffer.baseAddress!.advanced(by: Offset.chainHash).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        var hasher = SHA256()
        hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[Offset.chainHash...]))
        let hash = hasher.finalize().withUnsafeBytes { ChainHash($0) }
        hash.withBytes { buffer.baseAddress!.advanced(by: Offset.chainHash).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[Offset.chainHash...]))
        buffer.storeBytes(of: crc.bigEndian, toByteOffset: Offset.checksum, as: UInt32.self)
        return hash
    }

    /// SHA-256(previous || body).
    package static func chainHash(previous: ChainHash, body: UnsafeRawBufferPointer) -> ChainHash {
        var hasher = SHA256()
        previous.withBytes { hasher.update(bufferPointer: $0) }
        hasher.update(bufferPointer: body)
        return hasher.finalize().withUnsafeBytes { ChainHash($0) }
    }

    /// The stored chain hash of a record whose length was checked.
    package static func storedHash(_ record: UnsafeRawBufferPointer) -> ChainHash {
        ChainHash(UnsafeRawBufferPointer(rebasing: record[Offset.chainHash..<Offset.layout]))
    }

}

/// Sequential big-endian writes into a buffer whose size was computed beforehand.
package struct ByteWriter {
    package let buffer: UnsafeMutableRawBufferPointer
    package var offset: Int

    package init(buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        self.buffer = buffer
        self.offset = offset
    }

    package mutating func u8(_ value: UInt8) {
        buffer[offset] = value
        offset += 1
    }
    package mutating func u16(_ value: UInt16) {
        buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
        offset += 2
    }
    package mutating func u32(_ value: UInt32) {
        buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
    }
    package mutating func u64(_ value: UInt64) {
        buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
        offset += 8
    }
    package mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes(UnsafeRawBufferPointer($0)) }
    }
    package mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard source.count > 0 else { return }
        (buffer.baseAddress! + offset).copyMemory(from: source.baseAddress!, byteCount: source.count)
        offset += source.count
    }
    package mutating func data(_ value: Data) { value.withUnsafeBytes { bytes($0) } }
    package mutating func string16(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            u16(UInt16(utf8.count))
            bytes(UnsafeRawBufferPointer(utf8))
        }
    }
}

/// Bounds-checked sequential big-endian reads; nil when the buffer ends too early.
@frozen
public struct ByteReader {
    public let buffer: UnsafeRawBufferPointer
    public var offset: Int

    @inlinable
    public init(buffer: UnsafeRawBufferPointer, offset: Int) {
        self.buffer = buffer
        self.offset = offset
    }

    @inlinable
    public mutating func u16() -> UInt16? {
        guard buffer.count - offset >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
    @inlinable
    public mutating func u32() -> UInt32? {
        guard buffer.count - offset >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    @inlinable
    public mutating func u64() -> UInt64? {
        guard buffer.count - offset >= 8 else { return nil }
        defer { offset += 8 }
        return UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    @inlinable
    public mutating func uuid() -> UUID? {
        guard buffer.count - offset >= 16 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + 16])) }
        offset += 16
        return UUID(uuid: raw)
    }
    @inlinable
    public mutating func slice(count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, buffer.count - offset >= count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }
    @inlinable
    public mutating func string16() -> String? {
        guard let count = u16(), let bytes = slice(count: Int(count)) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
    @inlinable
    public mutating func data(count: Int) -> Data? {
        slice(count: count).map { Data($0) }
    }
}

/// An append checked against the limits every backend enforces, with its records' metadata pairs
/// and encoded sizes worked out.
package struct CheckedAppend: Sendable {
    package let streamID: String
    package let events: [ProposedEvent]
    package let metadataPairs: [[(String, String)]]
    package let sizes: [Int]
    package let expected: ExpectedVersion
    package let claims: Set<String>
    package let releases: Set<String>
    /// For imported events: each one's own time (µs since 1970) instead of the log's clock.
    package let timestamps: [Int64]?

    /// Checks the stream id, the events (at least one, distinct ids, sizes), the claims and the
    /// timestamps; throws the typed error a caller expects of every backend.
    package init(
        _ events: [ProposedEvent], to streamID: String, expectedVersion: ExpectedVersion, claims: Set<String>, releases: Set<String>,
        timestamps: [Int64]?, maxPayload: Int
    ) throws(EventLogError) {
        try RecordFormat.validate(streamID: streamID)
        if let timestamps, timestamps.count != events.count {
            throw .invalidEvent(reason: "\(timestamps.count) timestamps for \(events.count) events")
        }
        for keys in [claims, releases] where !keys.isEmpty {
            for claim in keys where claim.utf8.isEmpty || claim.utf8.count > 500 {
                throw .invalidEvent(reason: "a claim must have 1–500 bytes, \"\(claim.prefix(40))\" has \(claim.utf8.count)")
            }
        }
        guard !events.isEmpty else { throw .invalidEvent(reason: "an append needs at least one event") }
        // Distinct ids: a set only when there is more than one.
        var seen = Set<UUID>(minimumCapacity: events.count > 1 ? events.count : 0)
        var pairs: [[(String, String)]] = []
        var sizes: [Int] = []
        pairs.reserveCapacity(events.count)
        sizes.reserveCapacity(events.count)
        for event in events {
            guard events.count == 1 || seen.insert(event.eventID).inserted else {
                throw .invalidEvent(reason: "event id \(event.eventID.uuidString) appears twice in one append")
            }
            let eventPairs = event.metadata.pairs
            sizes.append(try RecordFormat.encodedSize(streamID: streamID, event: event, pairs: eventPairs, maxPayload: maxPayload))
            pairs.append(eventPairs)
        }
        self.streamID = streamID
        self.events = events
        self.metadataPairs = pairs
        self.sizes = sizes
        self.expected = expectedVersion
        self.claims = claims
        self.releases = releases
        self.timestamps = timestamps
    }

    /// The records' templates (``RecordFormat/writeTemplate(into:streamID:event:pairs:)``), one
    /// after the other in one array: `sizes[0]` bytes for the first event, then the next.
    package func templates() -> [UInt8] {
        let total = sizes.reduce(0, +)
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var offset = 0
            for index in events.indices {
                let record = UnsafeMutableRawBufferPointer(rebasing: raw[offset..<(offset + sizes[index])])
                // The fields ``RecordFormat/seal(_:position:streamVersion:timestampMicros:previous:)``
                // writes (all before the event id) are zeros until then.
                UnsafeMutableRawBufferPointer(rebasing: record[..<RecordFormat.Offset.eventID]).initializeMemory(as: UInt8.self, repeating: 0)
                RecordFormat.writeTemplate(into: record, streamID: streamID, event: events[index], pairs: metadataPairs[index])
                offset += sizes[index]
            }
            count = total
        }
    }

    /// The stored-time of an imported event, in µs since 1970.
    package static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }
}

extension RecordFormat {
    /// Encodes one record (the layout above) and returns its bytes, chain hash and CRC.
    package static func encode(
        position: UInt64, streamVersion: UInt64, timestampMicros: Int64, streamID: String, event: ProposedEvent,
        pairs: [(String, String)], size: Int, previous: ChainHash
    ) -> (bytes: [UInt8], hash: ChainHash, crc: UInt32) {
        var hash = previous
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            hash = write(
                into: raw, position: position, streamVersion: streamVersion, timestampMicros: timestampMicros, streamID: streamID,
                event: event, pairs: pairs, previous: previous)
            count = size
        }
        let crc = UInt32(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: Offset.checksum, as: UInt32.self) })
        return (bytes, hash, crc)
    }

    /// The metadata section of a record (u16 pair count, then each pair as two u16-prefixed strings).
    package static func encodeMetadata(_ pairs: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        func u16(_ value: Int) {
            bytes.append(UInt8(value >> 8))
            bytes.append(UInt8(value & 0xFF))
        }
        u16(pairs.count)
        for (key, value) in pairs {
            u16(key.utf8.count)
            bytes += key.utf8
            u16(value.utf8.count)
            bytes += value.utf8
        }
        return bytes
    }

    /// Reads a metadata section; nil when it is malformed.
    package static func decodeMetadata(_ bytes: UnsafeRawBufferPointer) -> [(String, String)]? {
        var reader = ByteReader(buffer: bytes, offset: 0)
        guard let count = reader.u16() else { return nil }
        var pairs: [(String, String)] = []
        for _ in 0..<count {
            guard let key = reader.string16(), let value = reader.string16() else { return nil }
            pairs.append((key, value))
        }
        return reader.offset == bytes.count ? pairs : nil
    }
}
