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
    ///
    /// - Parameter operation: the operation about to happen.
    /// - Throws: any error to refuse the operation (for example `AccountServiceError.cancelled` when
    ///   the user declines, `AccountServiceError.wrongCredentials` for a wrong password); the service
    ///   then does not perform it.
    func ensureAuthenticated(for operation: SecurityRelatedOperation) async throws
}

extension SecurityRelatedAuthentication {
    /// Confirms the user may perform an unspecified security-related operation.
    ///
    /// - Throws: the hook's error when it refuses.
    public func ensureAuthenticated() async throws {
        try await ensureAuthenticated(for: .unspecified)
    }
}

/// A hook that always allows the operation.
public struct AlwaysAuthenticated: SecurityRelatedAuthentication {
    /// Creates the hook.
    public init() {}

    /// Allows every operation without asking.
    ///
    /// - Parameter operation: the operation about to happen (ignored).
    /// - Throws: never.
    public func ensureAuthenticated(for operation: SecurityRelatedOperation) async throws {}
}

/// A hook that forwards to a closure.
public struct SecurityRelatedAuthenticationHandler: SecurityRelatedAuthentication {
    private let handler: @Sendable (SecurityRelatedOperation) async throws -> Void

    /// A hook calling `handler`.
    ///
    /// - Parameter handler: called with each operation; it throws to refuse it.
    public init(_ handler: @escaping @Sendable (SecurityRelatedOperation) async throws -> Void) {
        self.handler = handler
    }

    /// Asks the hook, if one is set; throws when the operation must not go ahead.
    ///
    /// - Parameter operation: the operation about to happen, handed to the closure.
    /// - Throws: the closure's error, which refuses the operation.
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
    ///
    /// - Parameter wrappedValue: the hook, usually a ``SecurityRelatedAuthentication``.
    public init(wrappedValue: Modifier) {
        self.wrappedValue = wrappedValue
    }
}
