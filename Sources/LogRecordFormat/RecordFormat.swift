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
package enum RecordFormat {
    package static let formatVersion: UInt32 = 1
    package static let layoutVersion: UInt8 = 1
    /// Where each fixed field starts (see the table above).
    package enum Offset {
        package static let checksum = 0
        package static let chainHash = 4
        package static let layout = 36
        package static let flags = 37
        package static let position = 38
        package static let streamVersion = 46
        package static let timestamp = 54
        package static let eventID = 62
        package static let schemaVersion = 78
    }
    /// The first byte the chain hash covers (the layout byte).
    package static let bodyOffset = Offset.layout
    package static let fixedSize = 82
    package static let maxStreamIDBytes = 400
    package static let maxTypeBytes = 255
    package static let maxMetadataPairs = 256
    package static let maxMetadataFieldBytes = Int(UInt16.max)

    /// Checks a stream id: 1–400 bytes of UTF-8 without NUL (NUL separates it from the version in keys).
    package static func validate(streamID: String) throws(EventLogError) {
        let count = streamID.utf8.count
        if count == 0 { throw .invalidStreamID(streamID, reason: "it is empty") }
        if count > maxStreamIDBytes { throw .invalidStreamID(streamID, reason: "it has \(count) bytes; the limit is \(maxStreamIDBytes)") }
        if streamID.utf8.contains(0) { throw .invalidStreamID(streamID, reason: "it contains a NUL byte") }
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
        var writer = ByteWriter(buffer: buffer, offset: bodyOffset)
        writer.u8(layoutVersion)
        writer.u8(0)
        writer.u64(position)
        writer.u64(streamVersion)
        writer.u64(UInt64(bitPattern: timestampMicros))
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
        let hash = chainHash(previous: previous, body: UnsafeRawBufferPointer(rebasing: buffer[bodyOffset...]))
        hash.withBytes { buffer.baseAddress!.advanced(by: 4).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[Offset.chainHash...]))
        buffer.storeBytes(of: crc.bigEndian, toByteOffset: 0, as: UInt32.self)
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
package struct ByteReader {
    package let buffer: UnsafeRawBufferPointer
    package var offset: Int

    package init(buffer: UnsafeRawBufferPointer, offset: Int) {
        self.buffer = buffer
        self.offset = offset
    }

    package mutating func u16() -> UInt16? {
        guard buffer.count - offset >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
    package mutating func u32() -> UInt32? {
        guard buffer.count - offset >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    package mutating func u64() -> UInt64? {
        guard buffer.count - offset >= 8 else { return nil }
        defer { offset += 8 }
        return UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    package mutating func uuid() -> UUID? {
        guard buffer.count - offset >= 16 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + 16])) }
        offset += 16
        return UUID(uuid: raw)
    }
    package mutating func slice(count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, buffer.count - offset >= count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }
    package mutating func string16() -> String? {
        guard let count = u16(), let bytes = slice(count: Int(count)) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
    package mutating func data(count: Int) -> Data? {
        slice(count: count).map { Data($0) }
    }
}
