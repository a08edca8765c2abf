//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

extension AccountDetails: Codable {
    /// Decodes the values of the keys given in `decoder.userInfo[.accountDetailsKeys]` (an
    /// `[any AccountKey.Type]` or an AccountKeyRegistry; the built-in keys otherwise).
    /// Every other field is kept in unknownValues.
    public init(from decoder: any Decoder) throws {
        let registry: AccountKeyRegistry
        if let keys = decoder.userInfo[.accountDetailsKeys] as? [any AccountKey.Type] {
            registry = AccountKeyRegistry(keys)
        } else if let given = decoder.userInfo[.accountDetailsKeys] as? AccountKeyRegistry {
            registry = given
        } else {
            registry = .builtIn
        }
        let container = try decoder.container(keyedBy: AccountDetailsCodingKey.self)
        self.init()
        for codingKey in container.allKeys {
            if let key = registry.key(for: codingKey.stringValue) {
                if let value = try key.decode(from: container) {
                    storage[key.identifier] = Entry(key: key, value: value)
                }
            } else {
                unknownValues[codingKey.stringValue] = try container.decode(RawAccountValue.self, forKey: codingKey)
            }
        }
    }

    /// Encodes every value under its key's identifier, then the unknown values. Flags are not encoded.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AccountDetailsCodingKey.self)
        for (identifier, raw) in unknownValues where storage[identifier] == nil {
            try container.encode(raw, forKey: AccountDetailsCodingKey(identifier))
        }
        for identifier in storage.keys.sorted() {
            guard let entry = storage[identifier] else {
                continue
            }
            try entry.key.encode(entry.value, into: &container)
        }
    }

    /// Decodes details from JSON, looking for the given keys.
    ///
    /// - Parameters:
    ///   - data: a JSON object keyed by identifiers.
    ///   - keys: the keys to decode typed values for; other fields become unknown values.
    /// - Returns: the decoded details.
    /// - Throws: `DecodingError` when `data` is not a JSON object or a value does not fit its key.
    public static func decode(from data: Data, keys: [any AccountKey.Type]) throws -> AccountDetails {
        let decoder = JSONDecoder()
        decoder.userInfo[.accountDetailsKeys] = keys
        return try decoder.decode(AccountDetails.self, from: data)
    }

    /// Decodes details from JSON, looking for the keys of a registry.
    ///
    /// - Parameters:
    ///   - data: a JSON object keyed by identifiers.
    ///   - registry: the keys to decode typed values for; other fields become unknown values.
    /// - Returns: the decoded details.
    /// - Throws: `DecodingError` when `data` is not a JSON object or a value does not fit its key.
    public static func decode(from data: Data, registry: AccountKeyRegistry) throws -> AccountDetails {
        let decoder = JSONDecoder()
        decoder.userInfo[.accountDetailsKeys] = registry
        return try decoder.decode(AccountDetails.self, from: data)
    }

    /// One JSON document per identifier (known and unknown values); handy for per-key storage.
    ///
    /// - Returns: the JSON of each value, keyed by identifier.
    /// - Throws: `EncodingError` when a value cannot be written as JSON.
    public func encodedPerKey() throws -> [String: Data] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var result: [String: Data] = [:]
        for (identifier, raw) in unknownValues where storage[identifier] == nil {
            result[identifier] = try encoder.encode(raw)
        }
        for (identifier, entry) in storage {
            result[identifier] = try entry.key.encodeData(entry.value, with: encoder)
        }
        return result
    }

    /// Details from one JSON document per identifier; identifiers the registry does not know are kept unknown.
    ///
    /// - Parameters:
    ///   - encoded: the JSON of each value, keyed by identifier (as ``encodedPerKey()`` writes it).
    ///   - registry: the keys to decode typed values for.
    /// - Throws: `DecodingError` when a document is not JSON or does not fit its key.
    public init(perKey encoded: [String: Data], registry: AccountKeyRegistry = .builtIn) throws {
        self.init()
        // Room for a few more: a store adds the account id, user id and flags that it keeps apart,
        // and each of them would otherwise grow (copy and rehash) a full table.
        storage = Dictionary(minimumCapacity: encoded.count + 4)
        var decoder: JSONDecoder?
        for (identifier, data) in encoded {
            if let key = registry.key(for: identifier) {
                storage[identifier] = Entry(key: key, value: try key.decodeData(data, with: &decoder))
            } else {
                if unknownValues.isEmpty {
                    // Sized once for every value that may be unknown, instead of grown per value.
                    unknownValues.reserveCapacity(encoded.count)
                }
                if let plain = PlainJSONValue.rawValue(data) {
                    unknownValues[identifier] = plain
                } else {
                    let made = decoder ?? JSONDecoder()
                    decoder = made
                    unknownValues[identifier] = try made.decode(RawAccountValue.self, from: data)
                }
            }
        }
    }

    /// Turns unknown values whose identifier the registry now knows into typed values.
    ///
    /// - Parameter registry: the keys to look the unknown identifiers up in.
    /// - Throws: `DecodingError` when a stored value does not fit the key that now claims it.
    public mutating func resolveUnknownValues(using registry: AccountKeyRegistry) throws {
        let encoder = JSONEncoder()
        var decoder: JSONDecoder?
        for (identifier, raw) in unknownValues {
            guard let key = registry.key(for: identifier) else {
                continue
            }
            let value = try key.decodeData(try encoder.encode(raw), with: &decoder)
            storage[identifier] = Entry(key: key, value: value)
            unknownValues[identifier] = nil
        }
    }
}
