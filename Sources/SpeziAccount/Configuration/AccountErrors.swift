//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Errors of account operations (signup, modification) detected by validation. A `LocalizedError`,
/// as upstream: `localizedDescription` is a sentence to show.
public enum AccountOperationError: LocalizedError, Equatable, CustomStringConvertible {
    /// Required values are missing (their names).
    case missingAccountValue([String])
    /// A modification tried to change or remove the account id.
    case accountIdChanged
    /// A modification touched keys that are not mutable (their identifiers).
    case mutatingNonMutableAccountKeys([String])
    /// A modification tried to remove required keys (their identifiers).
    case removingRequiredAccountKeys([String])
    /// A value failed a validation rule.
    case invalidValue(key: String, rule: String, message: String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .missingAccountValue(names):
            "Missing required account values: \(names.joined(separator: ", "))"
        case .accountIdChanged:
            "The account id cannot be changed"
        case let .mutatingNonMutableAccountKeys(keys):
            "These account keys cannot be changed: \(keys.joined(separator: ", "))"
        case let .removingRequiredAccountKeys(keys):
            "These required account keys cannot be removed: \(keys.joined(separator: ", "))"
        case let .invalidValue(key, rule, message):
            "Invalid value for \(key) (\(rule)): \(message)"
        }
    }

    /// What went wrong, for display.
    public var errorDescription: String? {
        description
    }

    /// Why it went wrong.
    public var failureReason: String? {
        switch self {
        case .missingAccountValue: "Some required account details were not provided."
        case .accountIdChanged: "The account id is assigned by the account service and never changes."
        case .mutatingNonMutableAccountKeys: "Some account details can only be set by the account service."
        case .removingRequiredAccountKeys: "Required account details cannot be removed."
        case .invalidValue: "A value does not meet the account service's rules."
        }
    }

    /// What the user can do about it.
    public var recoverySuggestion: String? {
        switch self {
        case .missingAccountValue: "Provide every required value and try again."
        case .invalidValue(_, _, let message): message
        case .accountIdChanged, .mutatingNonMutableAccountKeys, .removingRequiredAccountKeys: "Leave these details unchanged."
        }
    }
}

/// Errors of an account configuration, reported when the runtime boots.
public enum AccountConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The service cannot store these keys and no AccountStorageProvider is configured.
    case missingStorageProvider(keys: [String])
    /// The service's supported keys do not include accountId.
    case supportedKeysMissAccountId
    /// These keys cannot take the configured requirement (e.g. `.requires` on a non-mutable key).
    case invalidRequirement(keys: [String])
    /// A key is configured twice.
    case duplicateKey(String)
    /// ExternalAccountStorage was asked to store details but no provider is configured.
    case noStorageProviderConfigured

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .missingStorageProvider(keys):
            "The account service cannot store \(keys.joined(separator: ", ")) and no AccountStorageProvider is configured"
        case .supportedKeysMissAccountId:
            "The account service's supported keys must include accountId"
        case let .invalidRequirement(keys):
            "These keys cannot take the configured requirement (required/collected keys must be displayed and mutable, supported keys displayed): \(keys.joined(separator: ", "))"
        case let .duplicateKey(key):
            "The key \(key) is configured twice"
        case .noStorageProviderConfigured:
            "No AccountStorageProvider is configured"
        }
    }
}

/// Errors of account services (the in-memory and other implementations).
public enum AccountServiceError: Error, Equatable, CustomStringConvertible {
    /// The user id is already taken.
    case credentialsTaken
    /// The user id or the password is wrong.
    case wrongCredentials
    /// An internal error.
    case internalError
    /// The operation was cancelled (e.g. step-up authentication was declined).
    case cancelled
    /// The operation needs a signed-in account.
    case notSignedIn

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case .credentialsTaken: "The user id is already taken"
        case .wrongCredentials: "Wrong user id or password"
        case .internalError: "Internal error"
        case .cancelled: "The operation was cancelled"
        case .notSignedIn: "No account is signed in"
        }
    }
}
