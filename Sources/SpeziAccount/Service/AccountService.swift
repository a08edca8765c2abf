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
    func logout() async throws
    /// Deletes the current account.
    func delete() async throws
    /// Changes values of the current account.
    func updateAccountDetails(_ modifications: AccountModifications) async throws
}
