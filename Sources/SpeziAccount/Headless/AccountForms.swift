//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// One field of a headless signup form.
public struct AccountFormField: Sendable {
    /// The key.
    public let key: any AccountKey.Type
    /// Its requirement level.
    public let requirement: AccountKeyRequirement
    /// The validation rules the service enforces for it.
    public let rules: [ValidationRule]

    /// The key's identifier.
    public var identifier: String { key.identifier }
    /// The key's name.
    public var name: String { key.name }
}

/// The headless counterpart of the signup form: which fields to ask for, grouped by category.
public struct SignupFormDescription: Sendable {
    /// The fields in configuration order, grouped by category (first appearance of a category decides its place).
    public let sections: [(category: AccountKeyCategory, fields: [AccountFormField])]

    /// The form for an app configuration and a service.
    ///
    /// - Parameters:
    ///   - values: the app's key configuration; its required and collected keys become fields.
    ///   - service: the service's configuration, for its required keys and validation rules.
    public init(values: AccountValueConfiguration, service: AccountServiceConfiguration) {
        let required = AccountValidation.requiredKeys(values: values, service: service)
        var keys = values.signupKeys
        for key in required where !keys.contains(where: { $0.identifier == key.identifier }) {
            keys.append(key)
        }
        let fields = keys.map { key in
            let isRequired = required.contains { $0.identifier == key.identifier }
            return AccountFormField(key: key, requirement: isRequired ? .required : .collected, rules: service.fieldValidationRules(for: key))
        }
        self.sections = Self.group(fields)
    }

    /// The identifiers of all fields, section by section.
    public var identifiers: [String] {
        sections.flatMap { $0.fields.map(\.identifier) }
    }

    /// Validates details entered in the form (same rules a service enforces).
    ///
    /// - Parameters:
    ///   - details: the values entered in the form.
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration.
    /// - Throws: `AccountOperationError.missingAccountValue(_:)` naming every required key left empty,
    ///   or `AccountOperationError.invalidValue(key:rule:message:)` for a value a rule refuses.
    public static func validate(
        _ details: AccountDetails, values: AccountValueConfiguration, service: AccountServiceConfiguration
    ) throws(AccountOperationError) {
        try AccountValidation.validateSignup(details, values: values, service: service)
    }

    static func group(_ fields: [AccountFormField]) -> [(category: AccountKeyCategory, fields: [AccountFormField])] {
        var order: [AccountKeyCategory] = []
        var grouped: [AccountKeyCategory: [AccountFormField]] = [:]
        for field in fields {
            if grouped[field.key.category] == nil {
                order.append(field.key.category)
            }
            grouped[field.key.category, default: []].append(field)
        }
        return order.map { ($0, grouped[$0] ?? []) }
    }
}

/// One row of a headless account overview.
public struct AccountOverviewRow: Sendable {
    /// The key.
    public let key: any AccountKey.Type
    /// The value, described.
    public let displayValue: String
    /// Whether the user may edit it (mutable and not `.manual`).
    public let isEditable: Bool
}

/// The headless counterpart of the account overview: the displayed values grouped by category.
public struct AccountOverviewDescription: Sendable {
    /// The rows by category.
    public let sections: [(category: AccountKeyCategory, rows: [AccountOverviewRow])]

    /// The overview of details under a configuration (only displayed keys; never the password).
    ///
    /// - Parameters:
    ///   - details: the account's details.
    ///   - values: the app's key configuration; its keys come first, in order, then the other keys of
    ///     `details`.
    public init(details: AccountDetails, values: AccountValueConfiguration) {
        var order: [AccountKeyCategory] = []
        var grouped: [AccountKeyCategory: [AccountOverviewRow]] = [:]
        let keys = values.keys + details.keys.filter { key in !values.keys.contains { $0.identifier == key.identifier } }
        for key in keys where key.options.contains(.display) && key.identifier != AccountDetails.__Key_password.identifier {
            guard let value = details.value(for: key) else {
                continue
            }
            let row = AccountOverviewRow(
                key: key,
                displayValue: String(describing: value),
                isEditable: key.options.contains(.mutable) && values.requirement(for: key) != .manual
            )
            if grouped[key.category] == nil {
                order.append(key.category)
            }
            grouped[key.category, default: []].append(row)
        }
        self.sections = order.map { ($0, grouped[$0] ?? []) }
    }
}
