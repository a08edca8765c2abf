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
    static func decode<Value>(_ type: Value.Type, from data: Data, decoder: JSONDecoder) -> Value? {
        if Value.self == String.self {
            return string(data).map { unsafeBitCast($0, to: Value.self) }
        }
        if Value.self == GenderIdentity.self {
            return string(data).flatMap(GenderIdentity.init(rawValue:)).map { unsafeBitCast($0, to: Value.self) }
        }
        if Value.self == Date.self {
            guard case .deferredToDate = decoder.dateDecodingStrategy else { return nil }
            return number(data).map { unsafeBitCast(Date(timeIntervalSinceReferenceDate: $0), to: Value.self) }
        }
        if Value.self == Double.self {
            return number(data).map { unsafeBitCast($0, to: Value.self) }
        }
        if Value.self == Bool.self {
            return boolean(data).map { unsafeBitCast($0, to: Value.self) }
        }
        if Value.self == PersonNameComponents.self {
            return personName(data).map { unsafeBitCast($0, to: Value.self) }
        }
        if Value.self == RawAccountValue.self {
            return rawValue(data).map { unsafeBitCast($0, to: Value.self) }
        }
        return nil
    }

    /// A value of an unknown key, when it is a plain string, a boolean or null (numbers, arrays
    /// and objects go to `JSONDecoder`).
    static func rawValue(_ data: Data) -> RawAccountValue? {
        if let text = string(data) { return .string(text) }
        if let flag = boolean(data) { return .bool(flag) }
        if data.elementsEqual("null".utf8) { return .null }
        return nil
    }

    /// A name as the encoder writes it: a flat object without whitespace whose members are
    /// distinct name parts with plain string values, e.g. `{"familyName":"Lovelace","givenName":"Ada"}`.
    static func personName(_ data: Data) -> PersonNameComponents? {
        data.withUnsafeBytes { bytes -> PersonNameComponents? in
            guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return nil }
            var name = PersonNameComponents()
            var seen = Set<String>()
            var index = 1
            /// The next plain string from `index` on (its quotes included), or nil.
            func nextString() -> String? {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
                var end = index + 1
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
                guard end < bytes.count, let text = string(UnsafeRawBufferPointer(rebasing: bytes[index...end])) else { return nil }
                index = end + 1
                return text
            }
            while index < bytes.count - 1 {
                if !seen.isEmpty {
                    guard bytes[index] == UInt8(ascii: ","), index + 1 < bytes.count - 1 else { return nil }
                    index += 1
                }
                guard let key = nextString(), seen.insert(key).inserted, index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = nextString() else { return nil }
                switch key {
                case "namePrefix": name.namePrefix = value
                case "givenName": name.givenName = value
                case "middleName": name.middleName = value
                case "familyName": name.familyName = value
                case "nameSuffix": name.nameSuffix = value
                case "nickname": name.nickname = value
                default: return nil
                }
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
        for byte in inner where byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            return nil
        }
        return String(decoding: inner, as: UTF8.self)
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
