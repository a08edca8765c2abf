//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A value of an unknown account key, kept verbatim as a JSON-like tree so it can be re-encoded.
public enum RawAccountValue: Sendable, Hashable, Codable {
    /// `null`.
    case null
    /// A boolean.
    case bool(Bool)
    /// An integer.
    case integer(Int64)
    /// A floating-point number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([RawAccountValue])
    /// An object.
    case object([String: RawAccountValue])

    /// Decodes the value from its coded form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([RawAccountValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: RawAccountValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Unsupported value of an unknown account key")
        }
    }

    /// Encodes the value into its coded form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(value): try container.encode(value)
        case let .integer(value): try container.encode(value)
        case let .double(value): try container.encode(value)
        case let .string(value): try container.encode(value)
        case let .array(value): try container.encode(value)
        case let .object(value): try container.encode(value)
        }
    }
}
