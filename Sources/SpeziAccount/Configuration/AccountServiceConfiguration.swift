//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Which keys an AccountService can store itself.
public enum SupportedAccountKeys: Sendable {
    /// Any key.
    case arbitrary
    /// Exactly these keys (must include accountId); others need an AccountStorageProvider.
    case exactly([any AccountKey.Type])

    /// Whether the service can store a key.
    ///
    /// - Parameter key: the key.
    /// - Returns: true for any key with `.arbitrary`, else whether the key's identifier is listed.
    public func canStore(_ key: any AccountKey.Type) -> Bool {
        switch self {
        case .arbitrary:
            true
        case let .exactly(keys):
            keys.contains { $0.identifier == key.identifier }
        }
    }
}

/// The kind of user id a service uses.
public enum UserIdType: Sendable, Hashable, Codable {
    /// An email address.
    case emailAddress
    /// A user name.
    case username
    /// Something else, with a label.
    case custom(String)
}

/// A component of an AccountServiceConfiguration.
public protocol AccountServiceConfigurationComponent: Sendable {}

/// The kind of user id a service uses.
public struct UserIdConfiguration: AccountServiceConfigurationComponent, Hashable {
    /// The user id is an email address.
    public static let emailAddress = UserIdConfiguration(idType: .emailAddress)
    /// The user id is a user name.
    public static let username = UserIdConfiguration(idType: .username)

    /// The id type.
    public let idType: UserIdType

    /// A configuration for an id type.
    ///
    /// - Parameter idType: the kind of user id.
    public init(idType: UserIdType) {
        self.idType = idType
    }
}

/// Keys the service itself requires at signup (in addition to the app's AccountValueConfiguration).
public struct RequiredAccountKeys: AccountServiceConfigurationComponent {
    /// The keys.
    public let keys: [any AccountKey.Type]

    /// The keys, written with key paths: `RequiredAccountKeys { \.userId; \.password }`.
    ///
    /// - Parameter keys: the key paths into ``AccountKeys``, one per line.
    public init(@RequiredKeysBuilder _ keys: () -> [any AccountKey.Type]) {
        self.keys = keys()
    }

    /// The given keys.
    ///
    /// - Parameter keys: the keys.
    public init(_ keys: [any AccountKey.Type]) {
        self.keys = keys
    }
}

/// Builds the list of a RequiredAccountKeys.
@resultBuilder
public enum RequiredKeysBuilder {
    /// One key path.
    ///
    /// - Parameter keyPath: a key path into ``AccountKeys``.
    /// - Returns: the key it names, as a list of one.
    public static func buildExpression<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> [any AccountKey.Type] {
        [AccountKeys.key(keyPath)]
    }

    /// Several keys.
    ///
    /// - Parameter components: the keys of each line.
    /// - Returns: all of them, in order.
    public static func buildBlock(_ components: [any AccountKey.Type]...) -> [any AccountKey.Type] {
        components.flatMap { $0 }
    }
}

/// Builds the components of an AccountServiceConfiguration.
@resultBuilder
public enum AccountServiceConfigurationBuilder {
    /// One component.
    ///
    /// - Parameter component: a component written in the builder's body.
    /// - Returns: the component, as a list of one.
    public static func buildExpression(_ component: any AccountServiceConfigurationComponent) -> [any AccountServiceConfigurationComponent] {
        [component]
    }

    /// Several components.
    ///
    /// - Parameter components: the components of each line.
    /// - Returns: all of them, in order.
    public static func buildBlock(_ components: [any AccountServiceConfigurationComponent]...) -> [any AccountServiceConfigurationComponent] {
        components.flatMap { $0 }
    }

    /// An `if` without `else`.
    ///
    /// - Parameter component: the branch's components, or nil when the condition was false.
    /// - Returns: the branch's components, or none.
    public static func buildOptional(_ component: [any AccountServiceConfigurationComponent]?) -> [any AccountServiceConfigurationComponent] {
        component ?? []
    }

    /// A branch of an `if/else`.
    ///
    /// - Parameter component: the components of the branch taken.
    /// - Returns: the same components.
    public static func buildEither(first component: [any AccountServiceConfigurationComponent]) -> [any AccountServiceConfigurationComponent] {
        component
    }

    /// A branch of an `if/else`.
    ///
    /// - Parameter component: the components of the branch taken.
    /// - Returns: the same components.
    public static func buildEither(second component: [any AccountServiceConfigurationComponent]) -> [any AccountServiceConfigurationComponent] {
        component
    }
}

/// What an AccountService supports: its keys, user id kind, required keys and validation rules.
///
/// ```swift
/// AccountServiceConfiguration(supportedKeys: .arbitrary) {
///     UserIdConfiguration.emailAddress
///     RequiredAccountKeys { \.userId; \.password }
/// }
/// ```
public struct AccountServiceConfiguration: Sendable {
    /// The keys the service can store.
    public let supportedKeys: SupportedAccountKeys
    /// The kind of user id (default: email address).
    public let userIdConfiguration: UserIdConfiguration
    /// Keys the service requires at signup.
    public let requiredAccountKeys: [any AccountKey.Type]
    private let explicitRules: [String: FieldValidationRules]

    /// A configuration with the supported keys and optional components.
    ///
    /// - Parameters:
    ///   - supportedKeys: the keys the service stores itself.
    ///   - components: a ``UserIdConfiguration`` (email address when absent), ``RequiredAccountKeys``
    ///     and ``FieldValidationRules``; other components are ignored.
    public init(
        supportedKeys: SupportedAccountKeys,
        @AccountServiceConfigurationBuilder _ components: () -> [any AccountServiceConfigurationComponent] = { [] }
    ) {
        self.supportedKeys = supportedKeys
        var userId = UserIdConfiguration.emailAddress
        var required: [any AccountKey.Type] = []
        var rules: [String: FieldValidationRules] = [:]
        for component in components() {
            switch component {
            case let component as UserIdConfiguration:
                userId = component
            case let component as RequiredAccountKeys:
                required.append(contentsOf: component.keys)
            case let component as FieldValidationRules:
                rules[component.keyIdentifier] = component
            default:
                break
            }
        }
        self.userIdConfiguration = userId
        self.requiredAccountKeys = required
        self.explicitRules = rules
    }

    init(
        supportedKeys: SupportedAccountKeys, userIdConfiguration: UserIdConfiguration, requiredAccountKeys: [any AccountKey.Type],
        rules: [FieldValidationRules]
    ) {
        self.supportedKeys = supportedKeys
        self.userIdConfiguration = userIdConfiguration
        self.requiredAccountKeys = requiredAccountKeys
        self.explicitRules = Dictionary(rules.map { ($0.keyIdentifier, $0) }) { _, last in last }
    }

    /// The validation rules of a key: the configured ones, else the defaults (user id and email get
    /// `nonEmpty` + `minimalEmail` when the user id is an email; password gets `nonEmpty` + `minimalPassword`).
    ///
    /// - Parameter key: the key.
    /// - Returns: the rules every string value of the key must pass (empty for keys without rules).
    public func fieldValidationRules(for key: any AccountKey.Type) -> [ValidationRule] {
        if let rules = explicitRules[key.identifier] {
            return rules.rules
        }
        switch key.identifier {
        case AccountDetails.__Key_userId.identifier:
            return userIdConfiguration.idType == .emailAddress ? [.nonEmpty, .minimalEmail] : [.nonEmpty]
        case AccountDetails.__Key_email.identifier:
            return [.nonEmpty, .minimalEmail]
        case AccountDetails.__Key_password.identifier:
            return [.nonEmpty, .minimalPassword]
        default:
            return []
        }
    }
}
