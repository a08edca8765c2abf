//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi

/// Creates and manages user accounts and keeps Account up to date.
///
/// Implement it with an actor, or a `Sendable` (e.g. `@MainActor`) final class. A service calls
/// Account/supplyUserDetails(_:) after signup/login/updates and Account/removeUserDetails()
/// after logout/delete, and must report AccountNotifications/Event/deletingAccount(_:) before
/// deleting an account.
public protocol AccountService: Module, Sendable {
    /// What the service supports.
    var configuration: AccountServiceConfiguration { get }

    /// Ends the session of the current account.
    ///
    /// - Throws: the service's error when the session cannot be ended (for example a remote service
    ///   that cannot reach its server).
    func logout() async throws
    /// Deletes the current account.
    ///
    /// - Throws: the refusal of the step-up re-authentication hook (such as
    ///   `AccountServiceError.cancelled`), the storage provider's error (the account then stays), or
    ///   the service's own error.
    func delete() async throws
    /// Changes values of the current account.
    ///
    /// - Parameter modifications: the values to set and to remove.
    /// - Throws: `AccountServiceError.notSignedIn` without a signed-in account, ``AccountOperationError``
    ///   when validation refuses the change, `AccountServiceError.credentialsTaken` for a user id of
    ///   another account, or the refusal of the step-up re-authentication hook.
    func updateAccountDetails(_ modifications: AccountModifications) async throws
}
