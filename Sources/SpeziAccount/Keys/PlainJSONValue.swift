//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Reads the JSON of the most common account values (a string without escapes, a number, a
/// boolean, a gender identity, a name, an unknown key's string) without `JSONDecoder`, which costs several microseconds per value
/// and sets the pace of every details read.
///
/// It answers only where the result is certain to equal `JSONDecoder`'s with default strategies;
/// anything else (escapes, non-ASCII text, whitespace, other types, a decoder with another date
/// strategy) returns nil and goes to `JSONDecoder`, which also reports every malformed value.
enum PlainJSONValue {
    /// The value, type-erased, or nil. Erased rather than `Value?`: in a generic context the
    /// metadata of `Optional<Value>` is looked up at run time on every call, which cost more than
    /// reading a short string.
    static func decode<Value>(_ type: Value.Type, from data: Data, datesAsReferenceSeconds: Bool) -> (any Sendable)? {
        if Value.self == String.self { return string(data) }
        if Value.self == GenderIdentity.self { return string(data).flatMap(GenderIdentity.init(rawValue:)) }
        if Value.self == Date.self {
            guard datesAsReferenceSeconds else { return nil }
            return number(data).map { Date(timeIntervalSinceReferenceDate: $0) }
        }
        if Value.self == Double.self { return number(data) }
        if Value.self == Bool.self { return boolean(data) }
        if Value.self == PersonNameComponents.self { return personName(data) }
        if Value.self == RawAccountValue.self { return rawValue(data) }
        return nil
    }

    /// Whether the decoder reads dates as `Date`'s own `Codable` form does (seconds since the
    /// reference date), the only form read here without it.
    static func datesAsReferenceSeconds(_ decoder: JSONDecoder) -> Bool {
        if case .deferredToDate = decoder.dateDecodingStrategy { return true }
        return false
    }

    /// A value of an unknown key, when it is a plain string, a boolean or null (numbers, arrays
    /// and objects go to `JSONDecoder`).
    static func rawValue(_ data: Data) -> RawAccountValue? {
        if let text = string(data) { return .string(text) }
        if let flag = boolean(data) { return .bool(flag) }
        if data.elementsEqual("null".utf8) { return .null }
        return nil
    }

    /// The keys of the name parts, as bytes: a key is matched on its bytes, and each part may
    /// appear once (a bit per part).
    private static let namePartKeys: [[UInt8]] = ["namePrefix", "givenName", "middleName", "familyName", "nameSuffix", "nickname"].map {
        Array($0.utf8)
    }

    private static func setNamePart(_ part: Int, of name: inout PersonNameComponents, to value: String) {
        switch part {
        case 0: name.namePrefix = value
        case 1: name.givenName = value
        case 2: name.middleName = value
        case 3: name.familyName = value
        case 4: name.nameSuffix = value
        default: name.nickname = value
        }
    }

    /// A name as the encoder writes it: a flat object without whitespace whose members are
    /// distinct name parts with plain string values, e.g. `{"familyName":"Lovelace","givenName":"Ada"}`.
    static func personName(_ data: Data) -> PersonNameComponents? {
        data.withUnsafeBytes { bytes -> PersonNameComponents? in
            guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return nil }
            var name = PersonNameComponents()
            var seen: UInt8 = 0
            var index = 1
            /// The next plain string's bytes from `index` on, quotes included, or nil.
            func nextString() -> UnsafeRawBufferPointer? {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
                var end = index + 1
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
                guard end < bytes.count else { return nil }
                defer { index = end + 1 }
                return UnsafeRawBufferPointer(rebasing: bytes[index...end])
            }
            while index < bytes.count - 1 {
                if seen != 0 {
                    guard bytes[index] == UInt8(ascii: ","), index + 1 < bytes.count - 1 else { return nil }
                    index += 1
                }
                guard let key = nextString(), index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                let inner = UnsafeRawBufferPointer(rebasing: key[1..<(key.count - 1)])
                guard let part = namePartKeys.firstIndex(where: { $0.elementsEqual(inner) }), seen & (1 << part) == 0 else { return nil }
                seen |= 1 << part
                index += 1
                guard let valueBytes = nextString(), let value = string(valueBytes) else { return nil }
                setNamePart(part, of: &name, to: value)
            }
            return index == bytes.count - 1 ? name : nil
        }
    }

    /// A JSON string of printable ASCII without escapes: `"…"` with no `"`, `\` or control byte inside.
    static func string(_ data: Data) -> String? {
        data.withUnsafeBytes { string($0) }
    }

    /// The same, on bytes in place.
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return nil }
        let inner = UnsafeRawBufferPointer(rebasing: bytes[1..<(bytes.count - 1)])
        guard isPlain(inner) else { return nil }
        return String(decoding: inner, as: UTF8.self)
    }

    /// True when every byte is printable ASCII other than `"` and `\`, checked eight bytes at a
    /// time: a word passes when no byte has its high bit set, none is below 0x20, and none equals
    /// `"` or `\` (the classic test for a zero byte, applied to the word XORed with each).
    static func isPlain(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ word: UInt64) -> Bool { (word &- ones) & ~word & highs != 0 }
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            if word & highs != 0 { return false }
            // A byte below 0x20 (the word has no high bits, so subtracting 0x20 from each byte
            // borrows into its high bit exactly there).
            if (word &- 0x20 &* ones) & highs != 0 { return false }
            if hasZeroByte(word ^ (0x22 &* ones)) || hasZeroByte(word ^ (0x5C &* ones)) { return false }
            offset += 8
        }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            offset += 1
        }
        return true
    }

    /// A JSON number, by the grammar `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, at most 32 bytes.
    static func number(_ data: Data) -> Double? {
        data.withUnsafeBytes { bytes -> Double? in
            guard !bytes.isEmpty, bytes.count <= 32 else { return nil }
            var index = 0
            func digits() -> Int {
                let start = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - start
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                return nil
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return nil }
            }
            guard index == bytes.count else { return nil }
            guard let value = Double(String(decoding: bytes, as: UTF8.self)), value.isFinite else { return nil }
            return value
        }
    }

    /// `true` or `false`.
    static func boolean(_ data: Data) -> Bool? {
        if data.elementsEqual("true".utf8) { return true }
        if data.elementsEqual("false".utf8) { return false }
        return nil
    }
}
