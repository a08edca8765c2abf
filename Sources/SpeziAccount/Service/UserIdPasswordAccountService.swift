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
    func login(userId: String, password: String) async throws
    /// Creates an account from what the signup form collected, and signs it in.
    func signup(_ signupDetails: AccountDetails) async throws
    /// Starts a password reset for the user id (the same answer whether it has an account or not).
    func resetPassword(userId: String) async throws
}

extension UserIdPasswordAccountService {
    /// Signs in with a credential.
    public func login(_ credential: UserIdPasswordCredential) async throws {
        try await login(userId: credential.userId, password: credential.password)
    }
}

extension InMemoryAccountService: UserIdPasswordAccountService {}
