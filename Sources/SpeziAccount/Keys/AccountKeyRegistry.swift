//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Looks account keys up by their stable identifier (e.g. to decode stored details).
public struct AccountKeyRegistry: Sendable {
    private var byIdentifier: [String: any AccountKey.Type] = [:]

    /// The built-in keys: accountId, userId, password, name, dateOfBirth, genderIdentity, email.
    public static let builtIn = AccountKeyRegistry(AccountDetails.builtInKeys)

    /// A registry of the given keys (a later key with the same identifier replaces an earlier one).
    ///
    /// - Parameter keys: the keys to register.
    public init(_ keys: [any AccountKey.Type] = []) {
        for key in keys {
            register(key)
        }
    }

    /// Adds a key.
    ///
    /// - Parameter key: the key; it replaces a key registered under the same identifier.
    public mutating func register(_ key: any AccountKey.Type) {
        byIdentifier[key.identifier] = key
    }

    /// A registry with the keys of both.
    ///
    /// - Parameter other: the registry to add; its keys win over keys with the same identifier.
    /// - Returns: a registry with the keys of both.
    public func merging(_ other: AccountKeyRegistry) -> AccountKeyRegistry {
        var result = self
        for key in other.keys {
            result.register(key)
        }
        return result
    }

    /// The key with the given identifier, if registered.
    ///
    /// - Parameter identifier: the key's stable identifier.
    /// - Returns: the key, or nil when none is registered under it.
    public func key(for identifier: String) -> (any AccountKey.Type)? {
        byIdentifier[identifier]
    }

    /// All registered keys, sorted by identifier.
    public var keys: [any AccountKey.Type] {
        byIdentifier.keys.sorted().compactMap { byIdentifier[$0] }
    }
}

extension CodingUserInfoKey {
    /// The keys `AccountDetails` looks for when decoding: an `[any AccountKey.Type]` or an AccountKeyRegistry.
    /// Without it the built-in keys are used. Fields of other identifiers are kept as unknown values.
    public static let accountDetailsKeys = CodingUserInfoKey(rawValue: "SpeziAccount.accountDetailsKeys")!
}
