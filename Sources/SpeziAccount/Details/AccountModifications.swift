//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A change to an account: values to set and values to remove.
public struct AccountModifications: Sendable, Equatable {
    /// The new values.
    public let modifiedDetails: AccountDetails
    /// The removed values (their old values, or any value: only the keys matter).
    public let removedAccountDetails: AccountDetails

    /// A modification. Touching accountId throws AccountOperationError/accountIdChanged.
    ///
    /// - Parameters:
    ///   - modifiedDetails: the values to set.
    ///   - removedAccountDetails: the values to remove (only their keys matter).
    /// - Throws: `AccountOperationError.accountIdChanged` when either holds the account id.
    public init(modifiedDetails: AccountDetails, removedAccountDetails: AccountDetails = AccountDetails()) throws(AccountOperationError) {
        let accountIdKey = AccountDetails.__Key_accountId.self
        if modifiedDetails.contains(accountIdKey) || removedAccountDetails.contains(accountIdKey) {
            throw .accountIdChanged
        }
        self.modifiedDetails = modifiedDetails
        self.removedAccountDetails = removedAccountDetails
    }

    /// The keys being set.
    public var modifiedKeys: [any AccountKey.Type] {
        modifiedDetails.keys
    }

    /// The keys being removed.
    public var removedKeys: [any AccountKey.Type] {
        removedAccountDetails.keys
    }

    /// Whether nothing is changed.
    public var isEmpty: Bool {
        modifiedDetails.isEmpty && removedAccountDetails.isEmpty
    }

    /// Applies the modification to details (removals first, then the new values).
    ///
    /// - Parameter details: the details to change.
    /// - Returns: a copy of `details` with this modification applied.
    public func applied(to details: AccountDetails) -> AccountDetails {
        var result = details
        result.removeAll(removedKeys)
        result.add(contentsOf: modifiedDetails, merge: true)
        return result
    }

    /// The part of the modification concerning the given keys.
    ///
    /// - Parameter keys: the keys to keep.
    /// - Returns: a modification that sets and removes only those keys.
    public func filtered(to keys: [any AccountKey.Type]) -> AccountModifications {
        // accountId is never part of a modification, so this cannot throw.
        // swiftlint:disable:next force_try
        try! AccountModifications(
            modifiedDetails: modifiedDetails.filtered(to: keys), removedAccountDetails: removedAccountDetails.filtered(to: keys))
    }

    /// Whether the modification touches a key.
    ///
    /// - Parameter key: the key.
    /// - Returns: true when the modification sets or removes it.
    public func touches(_ key: any AccountKey.Type) -> Bool {
        modifiedDetails.contains(key) || removedAccountDetails.contains(key)
    }
}
