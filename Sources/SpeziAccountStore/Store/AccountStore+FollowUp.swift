//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount

extension AccountStore {
    /// What the account must still supply of the keys the store's configuration requires (after a
    /// key became required, accounts made before lack it): the headless `FollowUpInfoDescription`
    /// the seed's follow-up sheet is shown for. Ask after login; nil when there is no such account.
    ///
    /// - Parameter accountId: The account, usually the one that just signed in.
    /// - Returns: The description of the required keys the account lacks, or nil when the account is
    ///   unknown or deleted.
    /// - Throws: What reading the details cache throws (see ``details(of:)``).
    public func followUp(for accountId: String) throws -> FollowUpInfoDescription? {
        guard let details = try details(of: accountId) else { return nil }
        return FollowUpInfoDescription(details: details, values: valueConfiguration, service: serviceConfiguration)
    }

    /// Every live account that lacks a required key, with the identifiers it lacks, in account-id
    /// order: who to remind after a schema change. Read from the details cache.
    ///
    /// - Returns: One pair per live, non-anonymous account that lacks a required key: its id and the
    ///   identifiers of the keys it lacks.
    /// - Throws: What reading the details cache throws: `ProjectionError` when the cache is closed, or
    ///   an error reading or decoding a cached state.
    public func accountsMissingRequiredKeys() throws -> [(accountId: String, missing: [String])] {
        var result: [(accountId: String, missing: [String])] = []
        try forEachCachedAccount { state in
            guard !state.isDeleted, !state.isAnonymous else { return }
            let followUp = FollowUpInfoDescription(details: try details(from: state), values: valueConfiguration, service: serviceConfiguration)
            if followUp.isNeeded { result.append((state.accountId, followUp.identifiers)) }
        }
        return result
    }
}

extension AccountStore: AccountDetailsCacheSource {
    /// The account's details from the details projection (nil for unknown and deleted accounts).
    ///
    /// - Parameter accountId: The account to read.
    /// - Returns: Its details as the cache holds them, or nil.
    /// - Throws: What ``details(of:)`` throws.
    public func cachedDetails(of accountId: String) throws -> AccountDetails? {
        try details(of: accountId)
    }

    /// Rebuilds the details projection from the log (blue/green: the old generation answers
    /// until the new one has caught up).
    ///
    /// - Throws: `ProjectionError` when the rebuild fails (a record the projection cannot apply) or
    ///   the projection store is closed; the old generation keeps answering then.
    public func rebuildCache() async throws {
        try await projections.rebuild(AccountDetailsProjection.projectionName)
    }
}
