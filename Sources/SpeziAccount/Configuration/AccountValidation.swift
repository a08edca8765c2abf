//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Validation of signup details and modifications, usable by any account service.
public enum AccountValidation {
    /// The keys required at signup: the app's `.requires` keys plus the service's required keys.
    public static func requiredKeys(values: AccountValueConfiguration, service: AccountServiceConfiguration) -> [any AccountKey.Type] {
        var keys = values.keys(withRequirement: .required)
        for key in service.requiredAccountKeys where !keys.contains(where: { $0.identifier == key.identifier }) {
            keys.append(key)
        }
        return keys
    }

    /// Checks signup details: every required key has a value (a string must not be blank) and every
    /// string value passes the service's validation rules.
    ///
    /// - Throws: AccountOperationError/missingAccountValue(_:) naming every missing key, or
    ///   AccountOperationError/invalidValue(key:rule:message:).
    public static func validateSignup(
        _ details: AccountDetails,
        values: AccountValueConfiguration,
        service: AccountServiceConfiguration
    ) throws(AccountOperationError) {
        let missing = requiredKeys(values: values, service: service).filter { key in
            guard let value = details.value(for: key) else {
                return true
            }
            if let string = value as? String {
                return !ValidationRule.nonEmpty.validate(string)
            }
            return false
        }
        if !missing.isEmpty {
            throw .missingAccountValue(missing.map { $0.name })
        }
        try validateRules(details, service: service)
    }

    /// Checks every string value against the service's rules for its key.
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
    public static func validateModifications(
        _ modifications: AccountModifications,
        values: AccountValueConfiguration,
        service: AccountServiceConfiguration
    ) throws(AccountOperationError) {
        let touched = modifications.modifiedKeys + modifications.removedKeys
        let nonMutable = touched.filter { !$0.options.contains(.mutable) || values.requirement(for: $0) == .manual }
        if !nonMutable.isEmpty {
            throw .mutatingNonMutableAccountKeys(nonMutable.map { $0.identifier })
        }
        let required = requiredKeys(values: values, service: service) + [AccountDetails.__Key_userId.self]
        let removedRequired = modifications.removedKeys.filter { key in
            key.isRequired || required.contains { $0.identifier == key.identifier }
        }
        if !removedRequired.isEmpty {
            throw .removingRequiredAccountKeys(Array(Set(removedRequired.map { $0.identifier })).sorted())
        }
        try validateRules(modifications.modifiedDetails, service: service)
    }
}
