//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi

/// Stores the account values an AccountService cannot store itself.
///
/// Services reach it through ExternalAccountStorage. `load` must answer at once from a local
/// copy: empty details when nothing is stored, `nil` when a fetch is needed (then deliver the result
/// with ExternalAccountStorage/notifyAboutUpdatedDetails(for:_:)).
public protocol AccountStorageProvider: Module, Sendable {
    /// Creates the record of a new account.
    func create(_ accountId: String, _ details: AccountDetails) async throws
    /// The locally available details of the given keys, or `nil` when they must be fetched.
    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails?
    /// Updates stored details.
    func modify(_ accountId: String, _ modifications: AccountModifications) async throws
    /// Clears locally cached data of an account that was logged out.
    func disassociate(_ accountId: String) async
    /// Removes the record and cached data of a deleted account.
    func delete(_ accountId: String) async throws
}
