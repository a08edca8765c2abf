//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi

/// An AccountStorageProvider keeping everything in memory, with an AccountDetailsCache in front.
///
/// With `simulatesRemoteFetch`, `load` answers `nil` when the cache has no entry and delivers the
/// stored details shortly after through ExternalAccountStorage/notifyAboutUpdatedDetails(for:_:).
public actor InMemoryAccountStorageProvider: AccountStorageProvider {
    @Dependency(ExternalAccountStorage.self) private var storage
    @Dependency(AccountDetailsCache.self) private var cache
    private var records: [String: AccountDetails] = [:]
    private let simulatesRemoteFetch: Bool

    /// Creates the provider.
    ///
    /// - Parameter simulatesRemoteFetch: whether `load` answers `nil` for an account the cache does not
    ///   hold and delivers its values a moment later, as a remote provider would.
    public init(simulatesRemoteFetch: Bool = false) {
        self.simulatesRemoteFetch = simulatesRemoteFetch
    }

    /// The stored record of an account (for inspection).
    ///
    /// - Parameter accountId: the account.
    /// - Returns: every value stored for it, or nil when nothing was stored.
    public func record(for accountId: String) -> AccountDetails? {
        records[accountId]
    }

    /// Stores `details` for a new account.
    ///
    /// - Parameters:
    ///   - accountId: the new account.
    ///   - details: its values.
    /// - Throws: `AccountOperationError.accountIdChanged` when `details` hold the account id.
    public func create(_ accountId: String, _ details: AccountDetails) async throws {
        try await modify(accountId, AccountModifications(modifiedDetails: details))
    }

    /// Returns the stored values of `keys` for the account.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - keys: the keys to answer for.
    /// - Returns: the values of those keys (empty details when nothing is stored), or nil while a
    ///   simulated fetch is under way.
    /// - Throws: never.
    public func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails? {
        if let cached = cache.loadEntry(for: accountId, keys) {
            return cached
        }
        let stored = records[accountId] ?? AccountDetails()
        guard simulatesRemoteFetch else {
            return stored.filtered(to: keys)
        }
        let storage = storage
        let cache = cache
        Task {
            cache.communicateRemoteChanges(for: accountId, stored)
            storage.notifyAboutUpdatedDetails(for: accountId, stored.filtered(to: keys))
        }
        return nil
    }

    /// Applies `modifications` to the stored values.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - modifications: the values to set and to remove.
    /// - Throws: never.
    public func modify(_ accountId: String, _ modifications: AccountModifications) async throws {
        records[accountId] = modifications.applied(to: records[accountId] ?? AccountDetails())
        cache.communicateModifications(for: accountId, modifications)
    }

    /// Drops the account's cached values in this process; the stored values stay.
    ///
    /// - Parameter accountId: the account that was logged out.
    public func disassociate(_ accountId: String) async {
        cache.clearEntry(for: accountId)
    }

    /// Removes every stored value of the account.
    ///
    /// - Parameter accountId: the deleted account.
    /// - Throws: never.
    public func delete(_ accountId: String) async throws {
        records[accountId] = nil
        cache.clearEntry(for: accountId)
    }
}
