//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A whole-string validation rule.
public struct ValidationRule: Sendable, Hashable {
    /// A stable identifier (e.g. "minimalPassword").
    public let id: String
    /// The message shown when a value fails.
    public let message: String
    private let check: @Sendable (String) -> Bool

    /// A rule with a check.
    ///
    /// - Parameters:
    ///   - id: a stable identifier, reported with a failure.
    ///   - message: the message shown when a value fails.
    ///   - check: returns whether a value passes.
    public init(id: String, message: String, check: @escaping @Sendable (String) -> Bool) {
        self.id = id
        self.message = message
        self.check = check
    }

    /// Whether `value` satisfies the rule.
    ///
    /// - Parameter value: the whole string value.
    /// - Returns: true when it passes.
    public func validate(_ value: String) -> Bool {
        check(value)
    }

    /// At least one non-whitespace character.
    public static let nonEmpty = ValidationRule(id: "nonEmpty", message: "The field cannot be empty.") { value in
        value.contains { !$0.isWhitespace }
    }

    /// Something, "@", something.
    public static let minimalEmail = ValidationRule(id: "minimalEmail", message: "The provided email is invalid.") { value in
        guard let at = value.firstIndex(of: "@") else {
            return false
        }
        return at != value.startIndex && value.index(after: at) != value.endIndex
    }

    /// At least 8 characters.
    public static let minimalPassword = ValidationRule(id: "minimalPassword", message: "Your password must be at least 8 characters long.") {
        $0.count >= 8
    }

    /// At least 10 characters.
    public static let mediumPassword = ValidationRule(id: "mediumPassword", message: "Your password must be at least 10 characters long.") {
        $0.count >= 10
    }

    /// At least 12 characters.
    public static let strongPassword = ValidationRule(id: "strongPassword", message: "Your password must be at least 12 characters long.") {
        $0.count >= 12
    }

    /// Whether both sides are equal.
    public static func == (lhs: ValidationRule, rhs: ValidationRule) -> Bool {
        lhs.id == rhs.id
    }

    /// Hashes the same parts that equality compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }
}

/// The validation rules a service enforces for a string key (on the server side, not only in a UI).
public struct FieldValidationRules: AccountServiceConfigurationComponent {
    /// The identifier of the key.
    public let keyIdentifier: String
    /// The rules, all of which must pass.
    public let rules: [ValidationRule]

    /// Rules for a string key: `FieldValidationRules(for: \.password, rules: .strongPassword)`.
    ///
    /// - Parameters:
    ///   - keyPath: a key path into ``AccountKeys`` naming a key with `String` values.
    ///   - rules: the rules, all of which must pass; they replace the defaults for the key.
    public init<Key: AccountKey>(for keyPath: KeyPath<AccountKeys, Key.Type>, rules: [ValidationRule]) where Key.Value == String {
        self.keyIdentifier = AccountKeys.key(keyPath).identifier
        self.rules = rules
    }

    /// Rules for a string key.
    ///
    /// - Parameters:
    ///   - keyPath: a key path into ``AccountKeys`` naming a key with `String` values.
    ///   - rules: the rules, all of which must pass; they replace the defaults for the key.
    public init<Key: AccountKey>(for keyPath: KeyPath<AccountKeys, Key.Type>, rules: ValidationRule...) where Key.Value == String {
        self.init(for: keyPath, rules: rules)
    }
}
