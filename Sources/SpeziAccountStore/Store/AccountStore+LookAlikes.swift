//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

extension AccountStore {
    /// The log metadata that records from which position on user ids hold skeleton claims.
    static let skeletonClaimsMetadata = "account-store/skeleton-claims-from"

    /// The log's length when a version that claims confusable skeletons first opened it (0 for a
    /// store such a version created): user ids set at or before it hold no skeleton claim, and the
    /// look-alike index (``LookAlikeProjection``) covers them. Recorded once, in the log's metadata.
    static func skeletonClaimsFrom(_ log: any EventLogBackend) async throws -> UInt64 {
        let stored: [UInt8]
        if let recorded = try await log.metadata(skeletonClaimsMetadata) {
            stored = recorded
        } else {
            let head = try await log.lastPosition()
            stored = try await log.setMetadataIfAbsent(skeletonClaimsMetadata, (0..<8).map { UInt8(truncatingIfNeeded: head >> (56 - 8 * $0)) })
        }
        guard stored.count == 8 else { throw AccountStoreError.keyMismatch("the log's \(skeletonClaimsMetadata) record is damaged") }
        return stored.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Another live account whose user id looks like `userId` (the same confusable skeleton,
    /// ``UserIdNormalization/skeleton(_:)``): the holder of its skeleton claim, or an account whose
    /// user id was set before the store claimed skeletons and that the look-alike index names (its
    /// current user id checked again). Nil when there is none, or only `other`.
    ///
    /// - Parameters:
    ///   - userId: A user id to be taken.
    ///   - other: The account that takes it (its own user id is no conflict), or nil.
    /// - Returns: The account id of a look-alike's holder, or nil.
    /// - Throws: The log's errors, or `ProjectionError` when the index cannot catch up with the
    ///   position it covers.
    func lookAlikeHolder(ofUserId userId: String, other: String?) async throws -> String? {
        let claims = accounts.skeletonClaims(forUserId: userId)
        for claim in claims.sorted() {
            if let owner = try await log.claimOwner(claim), owner != other { return owner }
        }
        guard skeletonClaimsFrom > 0 else { return nil }
        try await projections.waitUntilApplied(LookAlikeProjection.projectionName, position: skeletonClaimsFrom)
        for claim in claims.sorted() {
            guard let holder = try LookAlikeProjection.holder(of: claim, in: projections), holder != other else { continue }
            // The index may lag behind a change of the holder's user id or its deletion: ask the log.
            guard let state = try await currentState(of: holder), !state.isDeleted, !state.userId.isEmpty,
                accounts.skeletonClaims(forUserId: state.userId).contains(claim)
            else { continue }
            return holder
        }
        return nil
    }
}
