//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A coding key built from an arbitrary identifier string.
public struct AccountDetailsCodingKey: CodingKey, Hashable, Sendable {
    /// The key's identifier.
    public let stringValue: String
    /// Always `nil`: keys are named, never numbered.
    public var intValue: Int? { nil }

    /// A key for the given identifier.
    ///
    /// - Parameter stringValue: the identifier.
    public init(_ stringValue: String) {
        self.stringValue = stringValue
    }

    /// A coding key for the identifier `stringValue`.
    public init?(stringValue: String) {
        self.stringValue = stringValue
    }

    /// Always `nil`: keys are named, never numbered.
    public init?(intValue: Int) {
        nil
    }
}

/// Operations on type-erased values, used by AccountDetails for `any AccountKey.Type`.
extension AccountKey {
    /// Whether `value` is the key's `.empty` placeholder (a required key holding it counts as not given).
    static func isEmptyPlaceholder(_ value: any Sendable) -> Bool {
        guard case let .empty(placeholder) = initialValue, let value = value as? Value else {
            return false
        }
        return value == placeholder
    }

    /// The key's `.default` initial value, if it has one.
    static var defaultInitialValue: (any Sendable)? {
        guard case let .default(value) = initialValue else {
            return nil
        }
        return value
    }

    static func erasedEquals(_ lhs: any Sendable, _ rhs: any Sendable) -> Bool {
        guard let lhs = lhs as? Value, let rhs = rhs as? Value else {
            return false
        }
        return lhs == rhs
    }

    static func encode(
        _ value: any Sendable, into container: inout KeyedEncodingContainer<AccountDetailsCodingKey>, as codingIdentifier: String? = nil
    ) throws {
        guard let value = value as? Value else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: container.codingPath, debugDescription: "\(value) is not a \(Value.self) for key \(identifier)"))
        }
        try container.encode(value, forKey: AccountDetailsCodingKey(codingIdentifier ?? identifier))
    }

    static func decode(from container: KeyedDecodingContainer<AccountDetailsCodingKey>, as codingIdentifier: String? = nil) throws -> (any Sendable)?
    {
        try container.decodeIfPresent(Value.self, forKey: AccountDetailsCodingKey(codingIdentifier ?? identifier))
    }

    static func encodeData(_ value: any Sendable, with encoder: JSONEncoder) throws -> Data {
        guard let value = value as? Value else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "\(value) is not a \(Value.self) for key \(identifier)"))
        }
        return try encoder.encode(value)
    }

    /// Decodes one value; `decoder` is made only when a value needs `JSONDecoder` (most are plain
    /// JSON read without one), and then kept for the next.
    static func decodeData(_ data: Data, with decoder: inout JSONDecoder?) throws -> any Sendable {
        if let plain = PlainJSONValue.decode(
            Value.self, from: data, datesAsReferenceSeconds: decoder.map(PlainJSONValue.datesAsReferenceSeconds) ?? true)
        {
            return plain
        }
        let made = decoder ?? JSONDecoder()
        decoder = made
        return try made.decode(Value.self, from: data)
    }

    static var erasedInitialValue: any Sendable { initialValue.value }

    static var isInitialValueEmpty: Bool {
        if case .empty = initialValue {
            return true
        }
        return false
    }
}
