//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A user id that the current rule (``UserIdNormalization``) would not have let in: accounts
/// created before it whose user ids are now the same, or a user id it refuses. Reported by
/// `accountctl verify` as a warning: the log is intact, and every account still opens and signs in.
/// A finding names accounts by their ids, never by their user ids.
public struct UserIdFinding: Sendable, Equatable, CustomStringConvertible {
    /// What was found.
    public enum Kind: Sendable, Equatable {
        /// Two or more live accounts whose user ids normalize the same.
        case collision
        /// Two or more live accounts whose user ids look alike (the same confusable skeleton,
        /// ``UserIdNormalization/skeletons(_:)``) without normalizing the same: created before the
        /// store checked look-alikes, or under another version of Unicode's confusables data.
        case lookAlike
        /// A live account whose user id the current rule refuses.
        case refused(UserIdNormalization.Refusal)
    }

    /// What was found.
    public let kind: Kind
    /// The accounts, in account-id order.
    public let accountIds: [String]
    /// For a collision: the account that holds the claim of the normalized user id, which a
    /// login with any spelling other than the ones the accounts were created with reaches (nil:
    /// none of them holds it).
    public let normalizedClaimHolder: String?

    /// Creates a finding.
    ///
    /// - Parameters:
    ///   - kind: A collision of normalized user ids, or a user id the current rule refuses.
    ///   - accountIds: The accounts concerned, in account-id order.
    ///   - normalizedClaimHolder: For a collision, the account holding the normalized user id's
    ///     claim, if any of them does.
    public init(kind: Kind, accountIds: [String], normalizedClaimHolder: String? = nil) {
        self.kind = kind
        self.accountIds = accountIds
        self.normalizedClaimHolder = normalizedClaimHolder
    }

    /// One line, with account ids only.
    public var description: String {
        let accounts = accountIds.joined(separator: ", ")
        switch kind {
        case .collision:
            let holder = normalizedClaimHolder.map { "; other spellings reach \($0)" } ?? ""
            return "accounts \(accounts) have user ids that are the same once normalized (created before the current rule); "
                + "a login reaches each under the user id it was created with\(holder)"
        case .lookAlike:
            return "accounts \(accounts) have user ids that look alike (the same confusable skeleton; created before look-alikes "
                + "were refused): each still signs in with its own"
        case let .refused(refusal):
            return "account \(accounts) has a user id the current rule refuses (\(refusal.rawValue)); it still signs in with it"
        }
    }
}

extension AccountStore {
    /// The live accounts whose user ids the current rule (``UserIdNormalization``) would not have
    /// let in: groups whose user ids normalize the same, then user ids it refuses, each in
    /// account-id order. Reads the details cache once it has applied the whole log.
    ///
    /// - Returns: The collisions first, then the look-alikes, then the refused user ids, each sorted by account ids; empty
    ///   when every live user id passes the current rule.
    /// - Throws: `ProjectionError` when the details cache cannot catch up with the log, the log's
    ///   `EventLogError` when a claim cannot be looked up, or a read error of the cache.
    public func userIdFindings() async throws -> [UserIdFinding] {
        try await waitUntilCaughtUp()
        var groups: [String: [String]] = [:]
        var skeletons: [String: Set<String>] = [:]
        var refused: [UserIdFinding] = []
        try forEachCachedAccount { state in
            guard !state.isDeleted, !state.userId.isEmpty else { return }
            groups[UserIdNormalization.normalized(state.userId), default: []].append(state.accountId)
            for skeleton in UserIdNormalization.skeletons(state.userId) {
                skeletons[skeleton, default: []].insert(UserIdNormalization.normalized(state.userId))
            }
            if let refusal = UserIdNormalization.refusal(of: state.userId) {
                refused.append(UserIdFinding(kind: .refused(refusal), accountIds: [state.accountId]))
            }
        }
        var collisions: [UserIdFinding] = []
        for (normalized, accountIds) in groups where accountIds.count > 1 {
            let holder = try await accounts.log.claimOwner(accounts.claim(forUserId: normalized))
            collisions.append(UserIdFinding(kind: .collision, accountIds: accountIds.sorted(), normalizedClaimHolder: holder))
        }
        var lookAlikes: [UserIdFinding] = []
        for accountIds in Set(skeletons.values.filter { $0.count > 1 }.map { $0.flatMap { groups[$0] ?? [] }.sorted() }) {
            lookAlikes.append(UserIdFinding(kind: .lookAlike, accountIds: accountIds))
        }
        let byAccount = { (left: UserIdFinding, right: UserIdFinding) in left.accountIds.lexicographicallyPrecedes(right.accountIds) }
        return collisions.sorted(by: byAccount) + lookAlikes.sorted(by: byAccount) + refused.sorted(by: byAccount)
    }
}
