//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Validation of signup details and modifications, usable by any account service.
public enum AccountValidation {
    /// The keys required at signup: the app's `.requires` keys plus the service's required keys.
    ///
    /// - Parameters:
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration.
    /// - Returns: the app's required keys in order, then the service's that are not among them.
    public static func requiredKeys(values: AccountValueConfiguration, service: AccountServiceConfiguration) -> [any AccountKey.Type] {
        var keys = values.keys(withRequirement: .required)
        for key in service.requiredAccountKeys where !keys.contains(where: { $0.identifier == key.identifier }) {
            keys.append(key)
        }
        return keys
    }

    /// Checks signup details: every required key has a value that is not empty (see
    /// ``isEmptyValue(_:)``) nor the key's `.empty` placeholder, and every string value passes the
    /// service's validation rules.
    ///
    /// - Parameters:
    ///   - details: the signup details.
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration.
    /// - Throws: AccountOperationError/missingAccountValue(_:) naming every missing key, or
    ///   AccountOperationError/invalidValue(key:rule:message:).
    public static func validateSignup(
        _ details: AccountDetails,
        values: AccountValueConfiguration,
        service: AccountServiceConfiguration
    ) throws(AccountOperationError) {
        let missing = missingRequiredKeys(details, values: values, service: service, placeholdersMissing: true)
        if !missing.isEmpty {
            throw .missingAccountValue(missing.map { $0.name })
        }
        try validateRules(details, service: service)
    }

    /// The required keys that `details` has no value for, or only an empty one (see
    /// ``isEmptyValue(_:)``), in the order of ``requiredKeys(values:service:)``.
    ///
    /// - Parameters:
    ///   - details: the details to check.
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration.
    ///   - placeholdersMissing: whether a value equal to the key's `.empty` initial value (a date at
    ///     the epoch, a 0) also counts as missing: the seed's signup form requires the user to change
    ///     such a value once. Signup validation sets it; stored accounts are judged without it.
    /// - Returns: the missing keys.
    public static func missingRequiredKeys(
        _ details: AccountDetails, values: AccountValueConfiguration, service: AccountServiceConfiguration, placeholdersMissing: Bool = false
    ) -> [any AccountKey.Type] {
        requiredKeys(values: values, service: service).filter { key in
            guard let value = details.value(for: key) else {
                return true
            }
            return isEmptyValue(value) || (placeholdersMissing && key.isEmptyPlaceholder(value))
        }
    }

    /// Signup details as the seed's form submits them: every required key the user left alone
    /// that has a `.default` initial value gets that value (an `.empty` one stays a placeholder,
    /// and the key stays missing).
    ///
    /// - Parameters:
    ///   - details: the details entered.
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration.
    /// - Returns: the details with the defaults of omitted required keys filled in.
    public static func applyingInitialValues(
        to details: AccountDetails, values: AccountValueConfiguration, service: AccountServiceConfiguration
    ) -> AccountDetails {
        var result = details
        for key in requiredKeys(values: values, service: service) where !details.contains(key) {
            if let value = key.defaultInitialValue {
                result.setValue(value, for: key)
            }
        }
        return result
    }

    /// Whether a value counts as not given for a required key: a blank string, a name whose parts
    /// are all blank, an empty collection or empty data.
    ///
    /// - Parameter value: a value of any key.
    /// - Returns: true when the value counts as empty; values of other types never do.
    public static func isEmptyValue(_ value: Any) -> Bool {
        func blank(_ string: String?) -> Bool { string.map { !ValidationRule.nonEmpty.validate($0) } ?? true }
        switch value {
        case let string as String:
            return blank(string)
        case let name as PersonNameComponents:
            return [name.namePrefix, name.givenName, name.middleName, name.familyName, name.nameSuffix, name.nickname].allSatisfy(blank)
        case let data as Data:
            return data.isEmpty
        case let collection as any Collection:
            return collection.isEmpty
        default:
            return false
        }
    }

    /// Checks every string value against the service's rules for its key.
    ///
    /// - Parameters:
    ///   - details: the values to check.
    ///   - service: the service's configuration, for its rules.
    /// - Throws: `AccountOperationError.invalidValue(key:rule:message:)` for the first value a rule
    ///   refuses.
    public static func validateRules(_ details: AccountDetails, service: AccountServiceConfiguration) throws(AccountOperationError) {
        for key in details.keys {
            guard let string = details.value(for: key) as? String else {
                continue
            }
            for rule in service.fieldValidationRules(for: key) where !rule.validate(string) {
                throw .invalidValue(key: key.identifier, rule: rule.id, message: rule.message)
            }
        }
    }

    /// Checks a modification: no non-mutable keys, no removal of required keys or the user id, and
    /// new string values pass the validation rules. (Touching accountId is refused by
    /// AccountModifications itself.)
    ///
    /// With `serverManaged`, the modification comes from the server itself, not from a client: it
    /// may write keys that clients cannot (configured `.manual`, or without the `mutable` option),
    /// and everything else is checked as for a client.
    ///
    /// - Parameters:
    ///   - modifications: the change to check.
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration.
    ///   - serverManaged: whether the server makes the change itself (it may then write `.manual` and
    ///     non-mutable keys).
    /// - Throws: `AccountOperationError.mutatingNonMutableAccountKeys(_:)` for keys a client cannot
    ///   write, `.removingRequiredAccountKeys(_:)` for removed required keys or the user id,
    ///   `.missingAccountValue(_:)` for a required value set to an empty one, or
    ///   `.invalidValue(key:rule:message:)` for a value a rule refuses.
    public static func validateModifications(
        _ modifications: AccountModifications,
        values: AccountValueConfiguration,
        service: AccountServiceConfiguration,
        serverManaged: Bool = false
    ) throws(AccountOperationError) {
        let touched = modifications.modifiedKeys + modifications.removedKeys
        let nonMutable = touched.filter { !$0.options.contains(.mutable) || values.requirement(for: $0) == .manual }
        if !nonMutable.isEmpty && !serverManaged {
            throw .mutatingNonMutableAccountKeys(nonMutable.map { $0.identifier })
        }
        let required = requiredKeys(values: values, service: service) + [AccountDetails.__Key_userId.self]
        let removedRequired = modifications.removedKeys.filter { key in
            key.isRequired || required.contains { $0.identifier == key.identifier }
        }
        if !removedRequired.isEmpty {
            throw .removingRequiredAccountKeys(Array(Set(removedRequired.map { $0.identifier })).sorted())
        }
        // A required value may change, but not to an empty one.
        let emptied = modifications.modifiedKeys.filter { key in
            (key.isRequired || required.contains { $0.identifier == key.identifier })
                && modifications.modifiedDetails.value(for: key).map(isEmptyValue) ?? true
        }
        if !emptied.isEmpty {
            throw .missingAccountValue(emptied.map { $0.name })
        }
        try validateRules(modifications.modifiedDetails, service: service)
    }
}
