//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Projections

/// The look-alike index of the user ids set before the store claimed skeletons: for each live
/// account whose user id was set at or before ``claimsFrom`` (the log's length when a version that
/// claims confusable skeletons first opened it), the claims of its skeletons
/// (``AccountLog/skeletonClaims(forUserId:)``) and the account.
///
/// User ids set later hold their skeleton's claim in the log itself, which keeps them unique under
/// concurrent signups; this index covers the accounts that predate those claims, so that a new
/// user id that looks like an old one is refused too. It follows the whole log to drop an old
/// account's entry when its user id changes or it is deleted; it never adds entries past
/// ``claimsFrom``. In a store created by a version that claims skeletons, ``claimsFrom`` is 0 and
/// the index stays empty.
struct LookAlikeProjection: Projection {
    static let projectionName = "user-id-look-alikes"
    static let version = 1

    let claimsFrom: UInt64
    let evolution: SchemaEvolution
    let vault: KeyVault?
    /// The skeleton claims of a user id (the store's ``AccountLog/skeletonClaims(forUserId:)``).
    let skeletonClaims: @Sendable (String) -> Set<String>

    var name: String { Self.projectionName }
    var fingerprint: String { "user-id-look-alikes v\(Self.version); before \(claimsFrom); keys: \(evolution.fingerprint)" }
    var databaseNames: [String] { ["skeletons", "skeleton-of"] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        guard claimsFrom > 0, let kind = record.withTypeBytes({ AccountEvent.Kind(nameBytes: $0) }), kind.declaration.userIdClaim != .none
        else { return }
        let accountId = record.streamID
        let account = Array(accountId.utf8)
        let keysVersion = evolution.currentVersion > 1 ? record.metadata.extra[SchemaEvolution.metadataKey].flatMap(Int.init) ?? 1 : 1
        let event = try evolution.upcast(
            try record.withPayload { try AccountEvent.decode(kind, payload: $0, accountId: accountId, vault: vault) }, writtenAt: keysVersion)
        // The account's old entry goes with any change of its user id.
        if let old = try state.get("skeleton-of", key: account) {
            _ = try state.delete("skeleton-of", key: account)
            for claim in old.split(separator: 0) where try state.get("skeletons", key: Array(claim)) == account {
                _ = try state.delete("skeletons", key: Array(claim))
            }
        }
        guard let userId = event.userIdSet, !userId.isEmpty, record.position <= claimsFrom else { return }
        // Two old accounts that look alike: the first keeps the entry (`accountctl user-ids` names them).
        var held: [[UInt8]] = []
        for claim in skeletonClaims(userId).sorted().map({ Array($0.utf8) }) where try state.get("skeletons", key: claim) == nil {
            try state.put("skeletons", key: claim, value: account)
            held.append(claim)
        }
        guard !held.isEmpty else { return }
        try state.put("skeleton-of", key: account, value: Array(held.joined(separator: [0])))
    }

    /// The account the index holds for a skeleton claim, or nil.
    static func holder(of claim: String, in store: ProjectionStore) throws -> String? {
        try store.read(projectionName) { state in
            try state.get("skeletons", key: Array(claim.utf8)).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
