//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi

/// The bridge between an AccountService and the configured AccountStorageProvider.
// Unchecked Sendable: its subscribers are held in a `SpeziLock`; nothing else changes.
public final class ExternalAccountStorage: Module, DefaultInitializable, @unchecked Sendable {
    /// Details of an account that arrived from the storage provider.
    public struct ExternallyStoredDetails: Sendable, Equatable {
        /// The account.
        public let accountId: String
        /// The details (not marked incomplete).
        public let details: AccountDetails
    }

    /// The configured storage provider, if any.
    public let provider: (any AccountStorageProvider)?
    private let subscribers = SpeziLock<[UUID: AsyncStream<ExternallyStoredDetails>.Continuation]>([:])

    /// An external storage without a provider.
    public convenience init() {
        self.init(provider: nil)
    }

    /// An external storage forwarding to `provider`.
    ///
    /// - Parameter provider: the provider, or nil for none (writes then fail).
    public init(provider: (any AccountStorageProvider)?) {
        self.provider = provider
    }

    /// An external storage forwarding to `storageProvider` (upstream's initializer).
    ///
    /// - Parameter storageProvider: the provider, or nil for none.
    public convenience init(_ storageProvider: (any AccountStorageProvider)?) {
        self.init(provider: storageProvider)
    }

    /// A new stream of details delivered later by the provider (multicast: every access subscribes).
    public var updatedDetails: AsyncStream<ExternallyStoredDetails> {
        let (stream, continuation) = AsyncStream<ExternallyStoredDetails>.makeStream()
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { $0[id] = nil }
        }
        return stream
    }

    private func requireProvider() throws -> any AccountStorageProvider {
        guard let provider else {
            throw AccountConfigurationError.noStorageProviderConfigured
        }
        return provider
    }

    /// Creates the external record of a new account; does nothing when `details` is empty.
    ///
    /// - Parameters:
    ///   - details: the values the service cannot store itself.
    ///   - accountId: the new account.
    /// - Throws: AccountOperationError/mutatingNonMutableAccountKeys(_:) for keys without the
    ///   `mutable` option (nothing is stored then), AccountConfigurationError/noStorageProviderConfigured
    ///   without a provider, or the provider's error.
    public func requestExternalStorage(of details: AccountDetails, for accountId: String) async throws {
        guard !details.isEmpty else {
            return
        }
        let nonMutable = details.keys.filter { !$0.options.contains(.mutable) }
        if !nonMutable.isEmpty {
            throw AccountOperationError.mutatingNonMutableAccountKeys(nonMutable.map { $0.identifier })
        }
        try await requireProvider().create(accountId, details)
    }

    /// Updates externally stored details; does nothing for an empty modification.
    ///
    /// - Parameters:
    ///   - modifications: the changes to the values the service cannot store itself.
    ///   - accountId: the account.
    /// - Throws: AccountOperationError/mutatingNonMutableAccountKeys(_:) for non-mutable keys
    ///   (nothing is stored then), AccountConfigurationError/noStorageProviderConfigured without a
    ///   provider, or the provider's error.
    public func updateExternalStorage(with modifications: AccountModifications, for accountId: String) async throws {
        guard !modifications.isEmpty else {
            return
        }
        let nonMutable = (modifications.modifiedKeys + modifications.removedKeys).filter { !$0.options.contains(.mutable) }
        if !nonMutable.isEmpty {
            throw AccountOperationError.mutatingNonMutableAccountKeys(nonMutable.map { $0.identifier })
        }
        try await requireProvider().modify(accountId, modifications)
    }

    /// The externally stored details of the given keys. No keys: empty details. When the provider
    /// must fetch first, empty details marked `isIncomplete` (the rest arrives via updatedDetails).
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - keys: the keys whose values to load.
    /// - Returns: the stored values of those keys, or empty details marked `isIncomplete` while the
    ///   provider fetches them.
    /// - Throws: `AccountConfigurationError.noStorageProviderConfigured` when keys are asked for and no
    ///   provider is configured, or the provider's error.
    public func retrieveExternalStorage(for accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails {
        guard !keys.isEmpty else {
            return AccountDetails()
        }
        guard let details = try await requireProvider().load(accountId, keys) else {
            var incomplete = AccountDetails()
            incomplete.isIncomplete = true
            return incomplete
        }
        return details
    }

    /// Called by the provider when fetched details are available; clears `isIncomplete`.
    ///
    /// - Parameters:
    ///   - accountId: the account the details belong to.
    ///   - details: the fetched values.
    public func notifyAboutUpdatedDetails(for accountId: String, _ details: AccountDetails) {
        var details = details
        details.isIncomplete = false
        let update = ExternallyStoredDetails(accountId: accountId, details: details)
        for continuation in subscribers.current.values {
            continuation.yield(update)
        }
    }
}
