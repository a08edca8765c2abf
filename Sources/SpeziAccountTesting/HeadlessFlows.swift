//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import SpeziAccountStore

/// The seed's UI-test helpers (sign up with e-mail, password, name, gender identity and date of
/// birth; log in; update the gender identity; change the date of birth), without a UI: each fills
/// in what the form would have and calls the service.
extension EventSourcedAccountService {
    /// Signs up as the seed's signup form would.
    ///
    /// - Parameters:
    ///   - email: the user id.
    ///   - password: the password.
    ///   - name: the name.
    ///   - genderIdentity: the gender identity, or nil for none.
    ///   - dateOfBirth: the date of birth, or nil for none.
    /// - Throws: what the service's `signup(_:)` throws: `AccountOperationError` for a missing or
    ///   invalid value, `AccountServiceError.credentialsTaken` for a user id that has an account.
    public func signup(
        email: String, password: String, name: PersonNameComponents,
        genderIdentity: GenderIdentity? = nil, dateOfBirth: Date? = nil
    ) async throws {
        try await signup(Self.signupDetails(email: email, password: password, name: name, genderIdentity: genderIdentity, dateOfBirth: dateOfBirth))
    }

    /// Logs in as the seed's login form would.
    ///
    /// - Parameters:
    ///   - email: the user id.
    ///   - password: the password.
    /// - Throws: what the service's `login(userId:password:)` throws, such as
    ///   `AccountServiceError.wrongCredentials`.
    public func login(email: String, password: String) async throws {
        try await login(userId: email, password: password)
    }

    /// Changes the signed-in account's gender identity, as the account overview's picker would.
    ///
    /// - Parameter identity: the identity to pick.
    /// - Throws: what the service's `updateAccountDetails(_:)` throws, such as
    ///   `AccountServiceError.notSignedIn`.
    public func updateGenderIdentity(to identity: GenderIdentity) async throws {
        var change = AccountDetails()
        change.genderIdentity = identity
        try await updateAccountDetails(AccountModifications(modifiedDetails: change))
    }

    /// Changes the signed-in account's date of birth, as the account overview's date picker would.
    ///
    /// - Parameter date: the date to pick.
    /// - Throws: what the service's `updateAccountDetails(_:)` throws, such as
    ///   `AccountServiceError.notSignedIn`.
    public func changeDateOfBirth(to date: Date) async throws {
        var change = AccountDetails()
        change.dateOfBirth = date
        try await updateAccountDetails(AccountModifications(modifiedDetails: change))
    }

    /// The details the signup form collects.
    ///
    /// - Parameters:
    ///   - email: the user id.
    ///   - password: the password.
    ///   - name: the name.
    ///   - genderIdentity: the gender identity, or nil for none.
    ///   - dateOfBirth: the date of birth, or nil for none.
    /// - Returns: the details, ready for a signup.
    public static func signupDetails(
        email: String, password: String, name: PersonNameComponents,
        genderIdentity: GenderIdentity? = nil, dateOfBirth: Date? = nil
    ) -> AccountDetails {
        var details = AccountDetails()
        details.userId = email
        details.password = password
        details.name = name
        if let genderIdentity { details.genderIdentity = genderIdentity }
        if let dateOfBirth { details.dateOfBirth = dateOfBirth }
        return details
    }
}

extension AccountStore {
    /// Signs up as the seed's signup form would; returns the new account's details.
    ///
    /// - Parameters:
    ///   - email: the user id.
    ///   - password: the password.
    ///   - name: the name.
    ///   - genderIdentity: the gender identity, or nil for none.
    ///   - dateOfBirth: the date of birth, or nil for none.
    /// - Returns: the new account's details.
    /// - Throws: what the store's `signup(_:context:)` throws: `AccountOperationError` for a missing or
    ///   invalid value, `AccountServiceError.credentialsTaken` for a user id that has an account.
    @discardableResult
    public func signup(
        email: String, password: String, name: PersonNameComponents,
        genderIdentity: GenderIdentity? = nil, dateOfBirth: Date? = nil
    ) async throws -> AccountDetails {
        try await signup(
            EventSourcedAccountService.signupDetails(
                email: email, password: password, name: name,
                genderIdentity: genderIdentity, dateOfBirth: dateOfBirth))
    }

    /// Changes an account's gender identity.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - identity: the new gender identity.
    /// - Returns: the account's details after the change.
    /// - Throws: what the store's `modify(_:_:context:)` throws, such as `AccountStoreError` for an
    ///   unknown account.
    @discardableResult
    public func updateGenderIdentity(of accountId: String, to identity: GenderIdentity) async throws -> AccountDetails {
        var change = AccountDetails()
        change.genderIdentity = identity
        return try await modify(accountId, try AccountModifications(modifiedDetails: change))
    }

    /// Changes an account's date of birth.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - date: the new date of birth.
    /// - Returns: the account's details after the change.
    /// - Throws: what the store's `modify(_:_:context:)` throws, such as `AccountStoreError` for an
    ///   unknown account.
    @discardableResult
    public func changeDateOfBirth(of accountId: String, to date: Date) async throws -> AccountDetails {
        var change = AccountDetails()
        change.dateOfBirth = date
        return try await modify(accountId, try AccountModifications(modifiedDetails: change))
    }
}
