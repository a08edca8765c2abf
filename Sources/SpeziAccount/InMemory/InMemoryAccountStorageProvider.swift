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
    public init(simulatesRemoteFetch: Bool = false) {
        self.simulatesRemoteFetch = simulatesRemoteFetch
    }

    /// The stored record of an account (for inspection).
    public func record(for accountId: String) -> AccountDetails? {
        records[accountId]
    }

    /// Stores `details` for a new account.
    public func create(_ accountId: String, _ details: AccountDetails) async throws {
        try await modify(accountId, AccountModifications(modifiedDetails: details))
    }

    /// Returns the stored values of `keys` for the account.
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
    public func modify(_ accountId: String, _ modifications: AccountModifications) async throws {
        records[accountId] = modifications.applied(to: records[accountId] ?? AccountDetails())
        cache.communicateModifications(for: accountId, modifications)
    }

    /// Drops the account's cached values in this process; the stored values stay.
    public func disassociate(_ accountId: String) async {
        cache.clearEntry(for: accountId)
    }

    /// Removes every stored value of the account.
    public func delete(_ accountId: String) async throws {
        records[accountId] = nil
        cache.clearEntry(for: accountId)
    }
}
