//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// How much an app asks for a key.
public enum AccountKeyRequirement: String, Sendable, Hashable, Codable {
    /// Must be supplied at signup.
    case required
    /// Asked for at signup, but optional.
    case collected
    /// Not asked for at signup; can be added later.
    case supported
    /// Neither asked for nor shown for editing; set by the server.
    case manual
}

/// One key of an AccountValueConfiguration with its requirement level.
public struct ConfiguredAccountKey: Sendable {
    /// The key.
    public let key: any AccountKey.Type
    /// How much it is asked for.
    public let requirement: AccountKeyRequirement

    /// Configures a key with a requirement.
    ///
    /// - Parameters:
    ///   - key: the key.
    ///   - requirement: how much the app asks for it.
    public init(key: any AccountKey.Type, requirement: AccountKeyRequirement) {
        self.key = key
        self.requirement = requirement
    }

    /// The key must be given at signup (it must be displayed and mutable).
    ///
    /// - Parameter keyPath: a key path into ``AccountKeys``, such as `\.name`.
    /// - Returns: the key, configured as ``AccountKeyRequirement/required``.
    public static func requires<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> ConfiguredAccountKey {
        ConfiguredAccountKey(key: AccountKeys.key(keyPath), requirement: .required)
    }

    /// The key is asked for at signup but optional (it must be displayed and mutable).
    ///
    /// - Parameter keyPath: a key path into ``AccountKeys``, such as `\.dateOfBirth`.
    /// - Returns: the key, configured as ``AccountKeyRequirement/collected``.
    public static func collects<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> ConfiguredAccountKey {
        ConfiguredAccountKey(key: AccountKeys.key(keyPath), requirement: .collected)
    }

    /// The key can be added later (it must be displayed).
    ///
    /// - Parameter keyPath: a key path into ``AccountKeys``.
    /// - Returns: the key, configured as ``AccountKeyRequirement/supported``.
    public static func supports<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> ConfiguredAccountKey {
        ConfiguredAccountKey(key: AccountKeys.key(keyPath), requirement: .supported)
    }

    /// The key is managed by the server: neither asked for nor editable by the user.
    ///
    /// - Parameter keyPath: a key path into ``AccountKeys``.
    /// - Returns: the key, configured as ``AccountKeyRequirement/manual``.
    public static func manual<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> ConfiguredAccountKey {
        ConfiguredAccountKey(key: AccountKeys.key(keyPath), requirement: .manual)
    }
}

/// The ordered list of keys an app uses and their AccountKeyRequirements.
///
/// ```swift
/// let configuration: AccountValueConfiguration = [
///     .requires(\.userId), .requires(\.password), .requires(\.name),
///     .collects(\.dateOfBirth), .collects(\.genderIdentity)
/// ]
/// ```
public struct AccountValueConfiguration: Sendable, ExpressibleByArrayLiteral {
    /// The configured keys in order.
    public let configured: [ConfiguredAccountKey]

    /// The default: requires userId, password, name; collects dateOfBirth, genderIdentity.
    public static let `default`: AccountValueConfiguration = [
        .requires(\.userId), .requires(\.password), .requires(\.name),
        .collects(\.dateOfBirth), .collects(\.genderIdentity)
    ]

    /// A configuration of the given keys.
    ///
    /// - Parameter configured: the keys with their requirements, in order.
    public init(_ configured: [ConfiguredAccountKey]) {
        self.configured = configured
    }

    /// Creates a configuration from a list of configured keys.
    public init(arrayLiteral elements: ConfiguredAccountKey...) {
        self.init(elements)
    }

    /// All configured keys, in order.
    public var keys: [any AccountKey.Type] {
        configured.map(\.key)
    }

    /// The configuration entry of a key.
    ///
    /// - Parameter key: the key.
    /// - Returns: the key's entry, or nil when the app does not configure it.
    public subscript(_ key: any AccountKey.Type) -> ConfiguredAccountKey? {
        configured.first { $0.key.identifier == key.identifier }
    }

    /// The requirement of a key, if configured.
    ///
    /// - Parameter key: the key.
    /// - Returns: how much the app asks for it, or nil when it is not configured.
    public func requirement(for key: any AccountKey.Type) -> AccountKeyRequirement? {
        self[key]?.requirement
    }

    /// The keys with the given requirement, in order.
    ///
    /// - Parameter requirement: the requirement level.
    /// - Returns: the configured keys with that level, in configuration order.
    public func keys(withRequirement requirement: AccountKeyRequirement) -> [any AccountKey.Type] {
        configured.filter { $0.requirement == requirement }.map(\.key)
    }

    /// The keys asked for at signup (required and collected), in order.
    public var signupKeys: [any AccountKey.Type] {
        configured.filter { $0.requirement == .required || $0.requirement == .collected }.map(\.key)
    }

    /// Checks the key options: `.requires`/`.collects` need a displayed, mutable key, `.supports` a displayed one.
    ///
    /// - Throws: `AccountConfigurationError.duplicateKey(_:)` for a key configured twice, or
    ///   `.invalidRequirement(keys:)` naming every key whose options do not allow its requirement.
    public func validate() throws(AccountConfigurationError) {
        var invalid: [String] = []
        var seen: Set<String> = []
        for entry in configured {
            let options = entry.key.options
            switch entry.requirement {
            case .required, .collected:
                if !options.contains(.display) || !options.contains(.mutable) {
                    invalid.append(entry.key.identifier)
                }
            case .supported:
                if !options.contains(.display) {
                    invalid.append(entry.key.identifier)
                }
            case .manual:
                break
            }
            if !seen.insert(entry.key.identifier).inserted {
                throw .duplicateKey(entry.key.identifier)
            }
        }
        if !invalid.isEmpty {
            throw .invalidRequirement(keys: invalid)
        }
    }
}
