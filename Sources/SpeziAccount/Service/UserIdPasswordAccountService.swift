//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A user id and a password, as the seed's login form hands them to its service.
public struct UserIdPasswordCredential: Sendable, Hashable {
    /// The user id (an e-mail address or a user name).
    public let userId: String
    /// The password.
    public let password: String

    /// A credential.
    ///
    /// - Parameters:
    ///   - userId: the user id as the user typed it.
    ///   - password: the password as the user typed it.
    public init(userId: String, password: String) {
        self.userId = userId
        self.password = password
    }
}

/// An account service with user-id and password accounts: what the seed's login, signup and
/// password-reset forms call. `InMemoryAccountService` and the account store's
/// `EventSourcedAccountService` conform, so headless test flows work against either.
public protocol UserIdPasswordAccountService: AccountService {
    /// Signs in; the service supplies the account's details to `Account`.
    ///
    /// - Parameters:
    ///   - userId: the user id of the account.
    ///   - password: its password.
    /// - Throws: `AccountServiceError.wrongCredentials` for an unknown user id or a wrong password, or
    ///   the service's own error (a remote service also reports its transport failures).
    func login(userId: String, password: String) async throws
    /// Creates an account from what the signup form collected, and signs it in.
    ///
    /// - Parameter signupDetails: the new account's values, with its user id and password.
    /// - Throws: ``AccountOperationError`` for a missing or invalid value,
    ///   `AccountServiceError.credentialsTaken` when the user id belongs to another account, or the
    ///   service's own error.
    func signup(_ signupDetails: AccountDetails) async throws
    /// Starts a password reset for the user id (the same answer whether it has an account or not).
    ///
    /// - Parameter userId: the user id to send the reset to.
    /// - Throws: the service's error when the request cannot be made; never because the user id has no
    ///   account.
    func resetPassword(userId: String) async throws
}

extension UserIdPasswordAccountService {
    /// Signs in with a credential.
    ///
    /// - Parameter credential: the user id and the password.
    /// - Throws: what ``login(userId:password:)`` throws.
    public func login(_ credential: UserIdPasswordCredential) async throws {
        try await login(userId: credential.userId, password: credential.password)
    }
}

extension InMemoryAccountService: UserIdPasswordAccountService {}
