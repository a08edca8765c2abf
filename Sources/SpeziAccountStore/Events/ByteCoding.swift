//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Errors met while decoding an event payload. Each names the field and the offset.
public enum PayloadDecodingError: Error, Equatable, CustomStringConvertible {
    /// The payload ended before `field` was complete.
    case truncated(field: String, offset: Int)
    /// A length or count is larger than the payload could hold, or than the limits allow.
    case lengthOutOfRange(field: String, length: UInt64, offset: Int)
    /// A string is not valid UTF-8.
    case invalidUTF8(field: String, offset: Int)
    /// An enumeration tag has no meaning in this version.
    case invalidTag(field: String, tag: UInt8, offset: Int)
    /// Bytes remain after the last field.
    case trailingBytes(count: Int)
    /// The payload's encoding version is newer than this code.
    case unsupportedEncoding(UInt8)
    /// The event type is not one this code knows.
    case unknownEventType(String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .truncated(field, offset): "payload truncated in field '\(field)' at byte \(offset)"
        case let .lengthOutOfRange(field, length, offset): "length \(length) of field '\(field)' at byte \(offset) is out of range"
        case let .invalidUTF8(field, offset): "field '\(field)' at byte \(offset) is not valid UTF-8"
        case let .invalidTag(field, tag, offset): "field '\(field)' at byte \(offset) has unknown tag \(tag)"
        case let .trailingBytes(count): "\(count) unexpected bytes after the last field"
        case let .unsupportedEncoding(version):
            "payload encoding version \(version) is not supported (this build reads version \(PayloadWriter.encodingVersion))"
        case let .unknownEventType(type): "unknown event type '\(type)'"
        }
    }
}

/// Writes the compact binary payload encoding described in FORMAT.md ("Account events").
struct PayloadWriter {
    static let encodingVersion: UInt8 = 1
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(Self.encodingVersion)
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func bool(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    mutating func blob<C: Collection>(_ value: C) where C.Element == UInt8 {
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `Data` value, copied in one go (appending it as a collection goes byte by byte).
    mutating func blob(_ value: Data) {
        varint(UInt64(value.count))
        value.withUnsafeBytes { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func optionalString(_ value: String?) {
        if let value {
            bytes.append(1)
            string(value)
        } else {
            bytes.append(0)
        }
    }

    mutating func strings(_ values: [String]) {
        varint(UInt64(values.count))
        for value in values {
            string(value)
        }
    }

    /// A map from key identifier to encoded value, written in identifier order so the bytes are deterministic.
    mutating func values(_ values: [String: Data]) {
        varint(UInt64(values.count))
        // The entries stay in the map: sorting their places moves no strings or data.
        for index in values.indices.sorted(by: { values[$0].key < values[$1].key }) {
            let (identifier, value) = values[index]
            string(identifier)
            blob(value)
        }
    }
}

/// Reads the payload encoding with bounds checks on every field; never traps on bad input.
///
/// Field names are taken as autoclosures: they are only made into strings when a field is bad, so
/// that decoding a good payload builds no error text (this is on every replay's hot path).
struct PayloadReader {
    /// No single field may claim more than this many bytes or elements.
    static let maximumFieldLength: UInt64 = 16 << 20
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) throws {
        self.bytes = bytes
        guard let version = bytes.first else {
            throw PayloadDecodingError.truncated(field: "encoding version", offset: 0)
        }
        guard version == PayloadWriter.encodingVersion else {
            throw PayloadDecodingError.unsupportedEncoding(version)
        }
        offset = 1
    }

    /// A reader at `offset` of bytes already checked (an ``AccountEventView``'s payload).
    init(checked bytes: UnsafeRawBufferPointer, at offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    mutating func byte(_ field: @autoclosure () -> String) throws -> UInt8 {
        guard offset < bytes.count else {
            throw PayloadDecodingError.truncated(field: field(), offset: offset)
        }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint(_ field: @autoclosure () -> String) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            let next = try byte(field())
            guard shift < 64, !(shift == 63 && next > 1) else {
                throw PayloadDecodingError.lengthOutOfRange(field: field(), length: .max, offset: start)
            }
            result |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 {
                return result
            }
            shift += 7
        }
    }

    mutating func bool(_ field: @autoclosure () -> String) throws -> Bool {
        let start = offset
        switch try byte(field()) {
        case 0: return false
        case 1: return true
        case let tag: throw PayloadDecodingError.invalidTag(field: field(), tag: tag, offset: start)
        }
    }

    mutating func length(_ field: @autoclosure () -> String) throws -> Int {
        let start = offset
        let length = try varint(field())
        guard length <= Self.maximumFieldLength, length <= UInt64(bytes.count - offset) else {
            throw PayloadDecodingError.lengthOutOfRange(field: field(), length: length, offset: start)
        }
        return Int(length)
    }

    /// The next `count` bytes, in place (`length` has checked that they are there).
    private mutating func take(_ count: Int) -> UnsafeBufferPointer<UInt8> {
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]).assumingMemoryBound(to: UInt8.self)
    }

    mutating func blob(_ field: @autoclosure () -> String) throws -> Data {
        let count = try length(field())
        let units = take(count)
        guard let base = units.baseAddress, count > 0 else { return Data() }
        return Data(bytes: base, count: count)
    }

    mutating func string(_ field: @autoclosure () -> String) throws -> String {
        let start = offset
        let count = try length(field())
        let units = take(count)
        // Decoding repairs bad UTF-8 with U+FFFD, so the string holds exactly the input's bytes only
        // when they were valid UTF-8. (Cheaper than `String(validating:)`, which is not specialized.)
        guard let base = units.baseAddress, count > 0 else { return "" }
        // ASCII (ids, key identifiers, hashes: nearly every string here) needs no check afterwards.
        if Self.isASCII(UnsafeRawBufferPointer(units)) {
            // Up to 15 bytes fit in the String itself: copied in, with nothing more to check.
            guard count <= 15 else { return String(decoding: units, as: UTF8.self) }
            return String(unsafeUninitializedCapacity: count) { target in
                UnsafeMutableRawBufferPointer(target).copyMemory(from: UnsafeRawBufferPointer(units))
                return count
            }
        }
        let string = String(decoding: units, as: UTF8.self)
        var same = string.utf8.count == count
        if same {
            same =
                string.utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, base, count) == 0 }
                ?? string.utf8.elementsEqual(units)
        }
        guard same else {
            throw PayloadDecodingError.invalidUTF8(field: field(), offset: start)
        }
        return string
    }

    mutating func optionalString(_ field: @autoclosure () -> String) throws -> String? {
        try bool(field()) ? try string(field()) : nil
    }

    mutating func strings(_ field: @autoclosure () -> String) throws -> [String] {
        // Each element takes at least one byte, so the count is bounded by what is left.
        let count = try length(field())
        var result: [String] = []
        result.reserveCapacity(count)
        for _ in 0..<count {
            result.append(try string(field()))
        }
        return result
    }

    /// A map of values. A value of up to 14 bytes is held inside its `Data` (no allocation); longer
    /// ones are slices of one copy of the whole payload, so a map costs one allocation for its
    /// bytes however many values it holds (their `startIndex` is their offset in that copy).
    mutating func values(_ field: @autoclosure () -> String) throws -> [String: Data] {
        let count = try length(field())
        var result = [String: Data](minimumCapacity: count)
        var shared: Data?
        for _ in 0..<count {
            let (identifier, value) = try valueEntry(field(), shared: &shared)
            result[identifier] = value
        }
        return result
    }

    /// Reads a map of values as ``values(_:)`` does, into `target` (an entry replaces the one with
    /// its identifier), without building a map of its own. Check the payload first
    /// (``skipValues(_:)``): a failure here leaves `target` partly changed.
    mutating func values(
        _ field: @autoclosure () -> String, into target: inout [String: Data], each: (String, Data) -> Void = { _, _ in }
    ) throws {
        let count = try length(field())
        var shared: Data?
        for _ in 0..<count {
            let (identifier, value) = try valueEntry(field(), shared: &shared)
            each(identifier, value)
            target[identifier] = value
        }
    }

    /// Checks a map of values as ``values(_:)`` reads it, and moves past it; returns its number
    /// of entries.
    @discardableResult
    mutating func skipValues(_ field: @autoclosure () -> String) throws -> Int {
        let count = try length(field())
        for _ in 0..<count {
            let identifier = try skipString("\(field()) identifier")
            // The identifier names the value's field in an error, as ``values(_:)`` names it.
            let bytes = bytes
            _ = take(try length("\(field())[\(String(decoding: bytes[identifier], as: UTF8.self))]"))
        }
        return count
    }

    /// Checks a string as ``string(_:)`` reads it, and moves past it; an ASCII one is checked
    /// without making it. Returns where its bytes are.
    @discardableResult
    mutating func skipString(_ field: @autoclosure () -> String) throws -> Range<Int> {
        var copy = self
        let count = try copy.length(field())
        let start = copy.offset
        if Self.isASCII(UnsafeRawBufferPointer(copy.take(count))) { self = copy } else { _ = try string(field()) }
        return start..<offset
    }

    /// Whether every byte is below 0x80, eight at a time.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        var last: UInt8 = 0
        while index < bytes.count {
            last |= bytes[index]
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0 && last < 0x80
    }

    /// One entry of a map of values: a value of up to 14 bytes inline, a longer one a slice of
    /// `shared`, the one copy of the payload (made by the first such value).
    private mutating func valueEntry(_ field: @autoclosure () -> String, shared: inout Data?) throws -> (String, Data) {
        let identifier = try string("\(field()) identifier")
        let length = try length("\(field())[\(identifier)]")
        let start = offset
        let units = take(length)
        if length <= Self.inlineDataBytes {
            return (identifier, units.baseAddress.map { Data(bytes: $0, count: length) } ?? Data())
        }
        if shared == nil { shared = Data(bytes: bytes.baseAddress!, count: bytes.count) }
        return (identifier, shared![start..<(start + length)])
    }

    /// Checks a list of strings as ``strings(_:)`` reads it, and moves past it.
    mutating func skipStrings(_ field: @autoclosure () -> String) throws {
        let count = try length(field())
        for _ in 0..<count { try skipString(field()) }
    }

    /// What a `Data` holds without allocating, on 64-bit platforms.
    static let inlineDataBytes = 14

    /// Whether every byte was read.
    var isAtEnd: Bool { offset == bytes.count }

    func finish() throws {
        guard offset == bytes.count else {
            throw PayloadDecodingError.trailingBytes(count: bytes.count - offset)
        }
    }
}
