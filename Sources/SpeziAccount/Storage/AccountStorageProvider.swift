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
///
/// Two spellings satisfy the protocol, and a provider implements one of them:
/// - the seeds': `create(_:_:)`, `load(_:_:) async throws`, `modify(_:_:)`;
/// - upstream SpeziAccount 2.3.5's: `load(_:_:) async` (not throwing), `store(_:_:)` with
///   AccountDetails (optional: by default it stores them as a modification) and `store(_:_:)`
///   with AccountModifications.
///
/// Each spelling's writes forward to the other's by default (`create` → `store(details)` →
/// `store(modifications)` ↔ `modify`), so ExternalAccountStorage, which calls `create` and `modify`,
/// reaches whichever the provider implements. A provider that implements neither `modify` nor
/// `store(modifications)` gets AccountStorageProviderError/missingImplementation(_:) on a write.
/// `disassociate(_:)` and `delete(_:)` are the same in both.
public protocol AccountStorageProvider: Module, Sendable {
    /// Creates the record of a new account.
    ///
    /// - Parameters:
    ///   - accountId: the new account.
    ///   - details: its values (never empty).
    /// - Throws: the provider's error.
    func create(_ accountId: String, _ details: AccountDetails) async throws
    /// The locally available details of the given keys, or `nil` when they must be fetched.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - keys: the keys to answer for.
    /// - Returns: the stored values (empty details when nothing is stored), or nil.
    /// - Throws: the provider's error (upstream's spelling does not throw).
    func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails?
    /// Updates stored details (the seeds' name).
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - modifications: the values to set and remove.
    /// - Throws: the provider's error.
    func modify(_ accountId: String, _ modifications: AccountModifications) async throws
    /// Stores the values of a new account (upstream's name for create).
    ///
    /// - Parameters:
    ///   - accountId: the new account.
    ///   - details: its values.
    /// - Throws: the provider's error.
    func store(_ accountId: String, _ details: AccountDetails) async throws
    /// Updates stored details (upstream's name for modify).
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - modifications: the values to set and remove.
    /// - Throws: the provider's error.
    func store(_ accountId: String, _ modifications: AccountModifications) async throws
    /// Clears locally cached data of an account that was logged out.
    ///
    /// - Parameter accountId: the account.
    func disassociate(_ accountId: String) async
    /// Removes the record and cached data of a deleted account.
    ///
    /// - Parameter accountId: the account.
    /// - Throws: the provider's error (it aborts the deletion).
    func delete(_ accountId: String) async throws
}

/// A storage provider that implements neither spelling of a write.
public enum AccountStorageProviderError: Error, Equatable, CustomStringConvertible {
    /// The provider implements neither of the named requirements.
    case missingImplementation(String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .missingImplementation(requirements):
            "The AccountStorageProvider implements neither \(requirements)"
        }
    }
}

/// The provider whose write a default implementation is forwarding, to stop a provider that
/// implements neither spelling from forwarding forever.
private enum ForwardedWrite {
    @TaskLocal static var provider: ObjectIdentifier?
}

extension AccountStorageProvider {
    /// By default, upstream's `store(_:_:)` with the details.
    ///
    /// - Parameters:
    ///   - accountId: the new account.
    ///   - details: its values.
    /// - Throws: the provider's error.
    public func create(_ accountId: String, _ details: AccountDetails) async throws {
        try await store(accountId, details)
    }

    /// By default, the details stored as a modification that sets them.
    ///
    /// - Parameters:
    ///   - accountId: the new account.
    ///   - details: its values.
    /// - Throws: AccountOperationError/accountIdChanged when they hold the account id, or the provider's error.
    public func store(_ accountId: String, _ details: AccountDetails) async throws {
        try await store(accountId, try AccountModifications(modifiedDetails: details))
    }

    /// By default, upstream's `store(_:_:)` with the modifications.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - modifications: the values to set and remove.
    /// - Throws: the provider's error, or AccountStorageProviderError/missingImplementation(_:).
    public func modify(_ accountId: String, _ modifications: AccountModifications) async throws {
        guard ForwardedWrite.provider != ObjectIdentifier(self) else {
            throw AccountStorageProviderError.missingImplementation("modify(_:_:) nor store(_:_:) with AccountModifications")
        }
        try await ForwardedWrite.$provider.withValue(ObjectIdentifier(self)) {
            try await store(accountId, modifications)
        }
    }

    /// By default, the seeds' `modify(_:_:)`.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - modifications: the values to set and remove.
    /// - Throws: the provider's error, or AccountStorageProviderError/missingImplementation(_:).
    public func store(_ accountId: String, _ modifications: AccountModifications) async throws {
        guard ForwardedWrite.provider != ObjectIdentifier(self) else {
            throw AccountStorageProviderError.missingImplementation("modify(_:_:) nor store(_:_:) with AccountModifications")
        }
        try await ForwardedWrite.$provider.withValue(ObjectIdentifier(self)) {
            try await modify(accountId, modifications)
        }
    }
}
