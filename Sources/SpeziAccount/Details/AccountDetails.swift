//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A collection of account values, keyed by AccountKey.
///
/// Values are read and written through typed subscripts (`details[AccountKeys.key(\.name)]`) or
/// the properties the keys declare (`details.name`). Besides the values, details carry flags that
/// are never encoded: isNewUser, isAnonymous, isVerified and isIncomplete.
///
/// Values of identifiers the decoder did not know are kept in unknownValues and written back
/// when encoding, so details written by a newer schema survive a round trip.
public struct AccountDetails: Sendable {
    struct Entry: Sendable {
        let key: any AccountKey.Type
        let value: any Sendable
    }

    var storage: [String: Entry] = [:]
    /// Values of identifiers no known key claimed, kept verbatim.
    public internal(set) var unknownValues: [String: RawAccountValue] = [:]

    /// The account was just created (set by a service after signup).
    public var isNewUser = false
    /// The account is anonymous (no credentials yet).
    public var isAnonymous = false
    /// The user id (e.g. the email address) was verified.
    public var isVerified = false
    /// Some values (from an external storage provider) are still being fetched.
    public var isIncomplete = false
    /// The kind of user id of the service the details came from; decides the email fallback.
    public var userIdType: UserIdType?
    /// The configuration of that service, when it was given (see `accountServiceConfiguration`).
    var serviceConfiguration: AccountServiceConfiguration?

    /// Empty details.
    public init() {}

    /// The value of a key, or `nil`. Setting `nil` removes it.
    ///
    /// - Parameter key: the key.
    /// - Returns: its value, or nil when the details hold none.
    public subscript<Key: AccountKey>(_ key: Key.Type) -> Key.Value? {
        get {
            storage[Key.identifier]?.value as? Key.Value
        }
        set {
            set(key, value: newValue)
        }
    }

    /// Sets (or, with `nil`, removes) the value of a key.
    ///
    /// - Parameters:
    ///   - key: the key.
    ///   - value: the new value, or nil to remove it.
    public mutating func set<Key: AccountKey>(_ key: Key.Type, value: Key.Value?) {
        if let value {
            storage[Key.identifier] = Entry(key: key, value: value)
            if !unknownValues.isEmpty {
                unknownValues[Key.identifier] = nil
            }
        } else {
            storage[Key.identifier] = nil
        }
    }

    /// Removes the value of a key.
    ///
    /// - Parameter key: the key; its unknown value, if any, goes too.
    public mutating func remove(_ key: any AccountKey.Type) {
        storage[key.identifier] = nil
        unknownValues[key.identifier] = nil
    }

    /// Removes the values of several keys.
    ///
    /// - Parameter keys: the keys.
    public mutating func removeAll(_ keys: [any AccountKey.Type]) {
        for key in keys {
            remove(key)
        }
    }

    /// Whether a value for the key is present.
    ///
    /// - Parameter key: the key.
    /// - Returns: true when the key has a typed value (unknown values do not count).
    public func contains(_ key: any AccountKey.Type) -> Bool {
        storage[key.identifier] != nil
    }

    /// The keys that have a value, sorted by identifier.
    public var keys: [any AccountKey.Type] {
        storage.keys.sorted().compactMap { storage[$0]?.key }
    }

    /// The identifiers of all values, known and unknown, sorted.
    public var identifiers: [String] {
        Set(storage.keys).union(unknownValues.keys).sorted()
    }

    /// Whether there are no values (known or unknown).
    public var isEmpty: Bool {
        storage.isEmpty && unknownValues.isEmpty
    }

    /// The number of known values.
    public var count: Int {
        storage.count
    }

    /// The type-erased value of a key.
    ///
    /// - Parameter key: the key.
    /// - Returns: its value, or nil when the details hold none.
    public func value(for key: any AccountKey.Type) -> (any Sendable)? {
        storage[key.identifier]?.value
    }

    /// Sets a type-erased value; returns `false` when `value` is not of the key's type.
    ///
    /// - Parameters:
    ///   - value: the value, which must be of the key's value type.
    ///   - key: the key.
    /// - Returns: whether the value was set.
    @discardableResult
    public mutating func setValue(_ value: any Sendable, for key: any AccountKey.Type) -> Bool {
        func typed<Key: AccountKey>(_ key: Key.Type) -> Bool {
            guard let value = value as? Key.Value else {
                return false
            }
            set(key, value: value)
            return true
        }
        return typed(key)
    }

    /// Adds the values of `other`. Existing values (and the user id type and service configuration)
    /// are kept unless `merge` is `true`; flags are OR-ed.
    ///
    /// - Parameters:
    ///   - other: the details whose values and flags to add.
    ///   - merge: whether values of `other` replace values already present.
    public mutating func add(contentsOf other: AccountDetails, merge: Bool = false) {
        for (identifier, entry) in other.storage where merge || storage[identifier] == nil {
            storage[identifier] = entry
            unknownValues[identifier] = nil
        }
        for (identifier, raw) in other.unknownValues where storage[identifier] == nil {
            if merge || unknownValues[identifier] == nil {
                unknownValues[identifier] = raw
            }
        }
        isNewUser = isNewUser || other.isNewUser
        isAnonymous = isAnonymous || other.isAnonymous
        isVerified = isVerified || other.isVerified
        isIncomplete = isIncomplete || other.isIncomplete
        if userIdType == nil || merge, let type = other.userIdType {
            userIdType = type
        }
        if serviceConfiguration == nil || merge, let configuration = other.serviceConfiguration {
            serviceConfiguration = configuration
        }
    }

    /// Details with the values of `other` added (see add(contentsOf:merge:)).
    ///
    /// - Parameters:
    ///   - other: the details whose values and flags to add.
    ///   - allowOverwrite: whether values of `other` replace values already present.
    /// - Returns: a copy with both sets of values.
    public func merging(_ other: AccountDetails, allowOverwrite: Bool = false) -> AccountDetails {
        var result = self
        result.add(contentsOf: other, merge: allowOverwrite)
        return result
    }

    /// The details restricted to the given keys (flags are kept, unknown values dropped).
    ///
    /// - Parameter keys: the keys to keep.
    /// - Returns: a copy holding only those keys' values.
    public func filtered(to keys: [any AccountKey.Type]) -> AccountDetails {
        var result = self
        let allowed = Set(keys.map { $0.identifier })
        result.storage = storage.filter { allowed.contains($0.key) }
        result.unknownValues = [:]
        return result
    }

    /// The details without the given keys.
    ///
    /// - Parameter keys: the keys to drop.
    /// - Returns: a copy without those keys' values.
    public func removing(_ keys: [any AccountKey.Type]) -> AccountDetails {
        var result = self
        result.removeAll(keys)
        return result
    }
}

extension AccountDetails: Equatable {
    /// Values, unknown values and flags are compared.
    public static func == (lhs: AccountDetails, rhs: AccountDetails) -> Bool {
        guard lhs.storage.count == rhs.storage.count,
            lhs.unknownValues == rhs.unknownValues,
            lhs.isNewUser == rhs.isNewUser,
            lhs.isAnonymous == rhs.isAnonymous,
            lhs.isVerified == rhs.isVerified,
            lhs.isIncomplete == rhs.isIncomplete
        else {
            return false
        }
        for (identifier, entry) in lhs.storage {
            guard let other = rhs.storage[identifier], entry.key.erasedEquals(entry.value, other.value) else {
                return false
            }
        }
        return true
    }

    /// Whether both have the same values (flags and user id type are ignored).
    ///
    /// - Parameter other: the details to compare with.
    /// - Returns: true when both hold the same typed and unknown values.
    public func hasSameValues(as other: AccountDetails) -> Bool {
        var lhs = self
        var rhs = other
        lhs.clearFlags()
        rhs.clearFlags()
        return lhs == rhs
    }

    private mutating func clearFlags() {
        isNewUser = false
        isAnonymous = false
        isVerified = false
        isIncomplete = false
    }
}

extension AccountDetails: CustomStringConvertible {
    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        let values = storage.keys.sorted().map { "\($0): \(storage[$0].map { String(describing: $0.value) } ?? "")" }
        let unknown = unknownValues.keys.sorted().map { "\($0) (unknown)" }
        return "AccountDetails(\((values + unknown).joined(separator: ", ")))"
    }
}
