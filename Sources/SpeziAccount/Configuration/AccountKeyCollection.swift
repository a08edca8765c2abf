//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// An ordered list of account keys, written with the ``AccountKeyCollectionBuilder``: upstream's
/// way of naming the keys a service supports.
///
/// ```swift
/// static let supportedKeys = AccountKeyCollection {
///     \.accountId
///     \.userId
///     \.name
/// }
/// AccountServiceConfiguration(supportedKeys: .exactly(supportedKeys))
/// ```
public struct AccountKeyCollection: Sendable, RandomAccessCollection {
    /// The keys, in order.
    public private(set) var keys: [any AccountKey.Type]

    /// The keys listed in the builder.
    ///
    /// - Parameter keys: the builder closure listing key paths.
    public init(@AccountKeyCollectionBuilder _ keys: () -> [any AccountKey.Type]) {
        self.keys = keys()
    }

    /// The given keys.
    ///
    /// - Parameter keys: the keys.
    public init(_ keys: [any AccountKey.Type]) {
        self.keys = keys
    }

    /// The first position.
    public var startIndex: Int { keys.startIndex }
    /// The position after the last key.
    public var endIndex: Int { keys.endIndex }

    /// The key at a position.
    ///
    /// - Parameter position: the position.
    /// - Returns: the key at `position`.
    public subscript(position: Int) -> any AccountKey.Type { keys[position] }

    /// Whether the collection lists a key.
    ///
    /// - Parameter key: the key.
    /// - Returns: true when a key with its identifier is listed.
    public func contains(_ key: any AccountKey.Type) -> Bool {
        keys.contains { $0.identifier == key.identifier }
    }

    /// Removes the given keys.
    ///
    /// - Parameter removed: the keys to remove.
    public mutating func removeAll(_ removed: [any AccountKey.Type]) {
        let identifiers = Set(removed.map { $0.identifier })
        keys.removeAll { identifiers.contains($0.identifier) }
    }
}

/// The result builder of an ``AccountKeyCollection``: key paths into `AccountKeys`, with `if`,
/// `if/else` and `for`.
@resultBuilder
public enum AccountKeyCollectionBuilder {
    /// One key path.
    ///
    /// - Parameter keyPath: the key's path in `AccountKeys`.
    /// - Returns: the key.
    public static func buildExpression<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> [any AccountKey.Type] {
        [AccountKeys.key(keyPath)]
    }

    /// Several groups of keys in sequence.
    ///
    /// - Parameter components: the groups.
    /// - Returns: their keys in order.
    public static func buildBlock(_ components: [any AccountKey.Type]...) -> [any AccountKey.Type] {
        components.flatMap { $0 }
    }

    /// An `if` without `else`.
    ///
    /// - Parameter component: the keys, when the condition held.
    /// - Returns: the keys, or none.
    public static func buildOptional(_ component: [any AccountKey.Type]?) -> [any AccountKey.Type] {
        component ?? []
    }

    /// The first branch of an `if/else`.
    ///
    /// - Parameter component: the branch's keys.
    /// - Returns: the same keys.
    public static func buildEither(first component: [any AccountKey.Type]) -> [any AccountKey.Type] {
        component
    }

    /// The second branch of an `if/else`.
    ///
    /// - Parameter component: the branch's keys.
    /// - Returns: the same keys.
    public static func buildEither(second component: [any AccountKey.Type]) -> [any AccountKey.Type] {
        component
    }

    /// A `for` loop.
    ///
    /// - Parameter components: the keys of each iteration.
    /// - Returns: all of them in order.
    public static func buildArray(_ components: [[any AccountKey.Type]]) -> [any AccountKey.Type] {
        components.flatMap { $0 }
    }

    /// An availability check.
    ///
    /// - Parameter component: the keys.
    /// - Returns: the same keys.
    public static func buildLimitedAvailability(_ component: [any AccountKey.Type]) -> [any AccountKey.Type] {
        component
    }
}

extension SupportedAccountKeys {
    /// Exactly the keys of a collection (upstream's spelling).
    ///
    /// - Parameter keys: the supported keys (must include accountId).
    /// - Returns: `.exactly` with the collection's keys.
    public static func exactly(_ keys: AccountKeyCollection) -> SupportedAccountKeys {
        .exactly(keys.keys)
    }

    /// Exactly the keys listed in the builder.
    ///
    /// - Parameter keys: the builder closure listing key paths.
    /// - Returns: `.exactly` with the listed keys.
    public static func exactly(@AccountKeyCollectionBuilder _ keys: () -> [any AccountKey.Type]) -> SupportedAccountKeys {
        .exactly(keys())
    }
}
