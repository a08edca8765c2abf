//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

extension AccountDetails {
    /// How to decode details with `DecodableWithConfiguration`, as upstream:
    /// `try decoder.decode(AccountDetails.self, from: data, configuration: .init(keys: keys))`.
    public struct DecodingConfiguration: Sendable {
        /// The keys to look for.
        public let keys: [any AccountKey.Type]
        /// Stored identifiers that differ from a key's own: stored identifier → key (for data
        /// written before a key was renamed).
        public let identifierMapping: [String: any AccountKey.Type]?  // swiftlint:disable:this discouraged_optional_collection
        /// Accepted for upstream's sake; every value is decoded at once here.
        public let lazyDecoding: Bool
        /// Whether a key of `keys` absent from the data is a `DecodingError.keyNotFound`.
        public let requireAllKeys: Bool

        /// A decoding configuration.
        ///
        /// - Parameters:
        ///   - keys: the keys to look for.
        ///   - identifierMapping: stored identifiers that differ from the keys' own.
        ///   - lazyDecoding: accepted and ignored (values are decoded at once).
        ///   - requireAllKeys: whether every key must be present.
        public init(
            keys: [any AccountKey.Type],
            identifierMapping: [String: any AccountKey.Type]? = nil,  // swiftlint:disable:this discouraged_optional_collection
            lazyDecoding: Bool = false,
            requireAllKeys: Bool = false
        ) {
            self.keys = keys
            self.identifierMapping = identifierMapping
            self.lazyDecoding = lazyDecoding
            self.requireAllKeys = requireAllKeys
        }
    }

    /// How to encode details with `EncodableWithConfiguration`, as upstream.
    public struct EncodingConfiguration: Sendable {
        /// Identifiers to write instead of a key's own: stored identifier → key.
        public let identifierMapping: [String: any AccountKey.Type]?  // swiftlint:disable:this discouraged_optional_collection

        /// An encoding configuration.
        ///
        /// - Parameter identifierMapping: identifiers to write instead of the keys' own.
        public init(identifierMapping: [String: any AccountKey.Type]? = nil) {  // swiftlint:disable:this discouraged_optional_collection
            self.identifierMapping = identifierMapping
        }
    }
}

/// The stored identifier of each key identifier in a mapping.
private func storedIdentifiers(_ mapping: [String: any AccountKey.Type]?) -> [String: String] {
    var result: [String: String] = [:]
    for (stored, key) in mapping ?? [:] {
        result[key.identifier] = stored
    }
    return result
}

extension AccountDetails: DecodableWithConfiguration {
    /// Decodes the configured keys (under their mapped identifiers); other fields are kept in
    /// ``unknownValues``, as the plain `Decodable` form does.
    ///
    /// - Parameters:
    ///   - decoder: the decoder.
    ///   - configuration: the keys and the identifier mapping.
    /// - Throws: a `DecodingError` for a malformed value, or `keyNotFound` for an absent key when
    ///   ``DecodingConfiguration/requireAllKeys`` is set.
    public init(from decoder: any Decoder, configuration: DecodingConfiguration) throws {
        let stored = storedIdentifiers(configuration.identifierMapping)
        var byCodingIdentifier: [String: any AccountKey.Type] = [:]
        for key in configuration.keys {
            byCodingIdentifier[stored[key.identifier] ?? key.identifier] = key
        }
        let container = try decoder.container(keyedBy: AccountDetailsCodingKey.self)
        self.init()
        for codingKey in container.allKeys {
            if let key = byCodingIdentifier[codingKey.stringValue] {
                if let value = try key.decode(from: container, as: codingKey.stringValue) {
                    storage[key.identifier] = Entry(key: key, value: value)
                }
            } else {
                unknownValues[codingKey.stringValue] = try container.decode(RawAccountValue.self, forKey: codingKey)
            }
        }
        if configuration.requireAllKeys, let absent = configuration.keys.first(where: { storage[$0.identifier] == nil }) {
            let codingKey = AccountDetailsCodingKey(stored[absent.identifier] ?? absent.identifier)
            throw DecodingError.keyNotFound(codingKey, .init(codingPath: container.codingPath, debugDescription: "No value for \(absent.identifier)"))
        }
    }
}

extension AccountDetails: EncodableWithConfiguration {
    /// Encodes every value under its mapped identifier (else its own), then the unknown values.
    ///
    /// - Parameters:
    ///   - encoder: the encoder.
    ///   - configuration: the identifier mapping.
    /// - Throws: the encoder's error.
    public func encode(to encoder: any Encoder, configuration: EncodingConfiguration) throws {
        let stored = storedIdentifiers(configuration.identifierMapping)
        var container = encoder.container(keyedBy: AccountDetailsCodingKey.self)
        let written = Set(storage.keys.map { stored[$0] ?? $0 })
        for (identifier, raw) in unknownValues where !written.contains(identifier) {
            try container.encode(raw, forKey: AccountDetailsCodingKey(identifier))
        }
        for identifier in storage.keys.sorted() {
            guard let entry = storage[identifier] else {
                continue
            }
            try entry.key.encode(entry.value, into: &container, as: stored[identifier])
        }
    }
}
