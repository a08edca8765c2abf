//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The headless counterpart of the seed's `FollowUpInfoSheet`: after a key became required (a
/// schema change), accounts made before lack it, and the app asks for it once the user is signed
/// in. This says which required keys an account is missing and checks what the user enters.
///
/// ```swift
/// let followUp = FollowUpInfoDescription(details: account.details!, values: values, service: service.configuration)
/// if followUp.isNeeded {
///     // ask for followUp.fields, then:
///     try await service.updateAccountDetails(try followUp.modifications(entered))
/// }
/// ```
public struct FollowUpInfoDescription: Sendable {
    /// The required keys the account has no value for (or only an empty one), in configuration order.
    public let fields: [AccountFormField]
    /// The service's configuration, for the validation rules.
    private let service: AccountServiceConfiguration

    /// Whether anything is missing: the seed would show its follow-up sheet.
    public var isNeeded: Bool { !fields.isEmpty }

    /// The identifiers of the missing keys.
    public var identifiers: [String] { fields.map(\.identifier) }

    /// What `details` lacks of the keys `values` and `service` require. The password and the account
    /// id are never in details, and are not asked for.
    ///
    /// - Parameters:
    ///   - details: the signed-in account's details.
    ///   - values: the app's key configuration.
    ///   - service: the service's configuration, for its required keys and validation rules.
    public init(details: AccountDetails, values: AccountValueConfiguration, service: AccountServiceConfiguration) {
        self.service = service
        let skipped = [AccountDetails.__Key_password.identifier, AccountDetails.__Key_accountId.identifier]
        fields = AccountValidation.missingRequiredKeys(details, values: values, service: service)
            .filter { !skipped.contains($0.identifier) }
            .map { AccountFormField(key: $0, requirement: .required, rules: service.fieldValidationRules(for: $0)) }
    }

    /// The modification that supplies the missing values, after checking that `entered` has a
    /// value for each missing key and that the service's rules accept them. Keys that are not
    /// missing are left out.
    ///
    /// - Parameter entered: the values the user entered for the missing keys.
    /// - Returns: a modification that sets the missing keys' values.
    /// - Throws: `AccountOperationError.missingAccountValue(_:)` naming the keys still empty, or
    ///   `AccountOperationError.invalidValue(key:rule:message:)` for a value a rule refuses.
    public func modifications(_ entered: AccountDetails) throws(AccountOperationError) -> AccountModifications {
        let stillMissing = fields.filter { field in entered.value(for: field.key).map(AccountValidation.isEmptyValue) ?? true }
        if !stillMissing.isEmpty {
            throw .missingAccountValue(stillMissing.map(\.name))
        }
        let supplied = entered.filtered(to: fields.map(\.key))
        try AccountValidation.validateRules(supplied, service: service)
        return try AccountModifications(modifiedDetails: supplied)
    }
}
