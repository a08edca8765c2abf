//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A security-sensitive operation that may need step-up re-authentication.
public enum SecurityRelatedOperation: String, Sendable, Hashable {
    /// Deleting the account.
    case deleteAccount
    /// Changing the user id.
    case changeUserId
    /// Changing the password.
    case changePassword
    /// Unspecified.
    case unspecified
}

/// A step-up re-authentication hook: the headless counterpart of SpeziAccount's security view modifier.
///
/// Throw (e.g. AccountServiceError/cancelled or AccountServiceError/wrongCredentials) to refuse.
public protocol SecurityRelatedAuthentication: Sendable {
    /// Confirms the user may perform `operation` (e.g. by checking a recently entered password).
    func ensureAuthenticated(for operation: SecurityRelatedOperation) async throws
}

extension SecurityRelatedAuthentication {
    /// Confirms the user may perform an unspecified security-related operation.
    public func ensureAuthenticated() async throws {
        try await ensureAuthenticated(for: .unspecified)
    }
}

/// A hook that always allows the operation.
public struct AlwaysAuthenticated: SecurityRelatedAuthentication {
    /// Creates the hook.
    public init() {}

    /// Allows every operation without asking.
    public func ensureAuthenticated(for operation: SecurityRelatedOperation) async throws {}
}

/// A hook that forwards to a closure.
public struct SecurityRelatedAuthenticationHandler: SecurityRelatedAuthentication {
    private let handler: @Sendable (SecurityRelatedOperation) async throws -> Void

    /// A hook calling `handler`.
    public init(_ handler: @escaping @Sendable (SecurityRelatedOperation) async throws -> Void) {
        self.handler = handler
    }

    /// Asks the hook, if one is set; throws when the operation must not go ahead.
    public func ensureAuthenticated(for operation: SecurityRelatedOperation) async throws {
        try await handler(operation)
    }
}

/// Marks a service property as its step-up re-authentication hook, which `delete` and credential
/// changes must pass:
///
/// ```swift
/// actor MyAccountService: AccountService {
///     @SecurityRelatedModifier var myModifier = MyModifier()
///     func delete() async throws {
///         try await myModifier.ensureAuthenticated()
///         // perform delete
///     }
/// }
/// ```
@propertyWrapper
public struct SecurityRelatedModifier<Modifier: Sendable>: Sendable {
    /// The hook.
    public var wrappedValue: Modifier

    /// Declares the hook.
    public init(wrappedValue: Modifier) {
        self.wrappedValue = wrappedValue
    }
}
