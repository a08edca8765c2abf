//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import LMDB
import Projections

/// The details cache: every account's current state, folded from the log and kept in LMDB. Every
/// account event is applied (security and external ones only move the version and the login
/// counters), so a cached state always equals the fold of its stream up to the checkpoint.
/// Its fingerprint covers its own version and the schema evolution, so a new upcaster rebuilds it.
public struct AccountDetailsProjection: Projection {
    public static let projectionName = "account-details"
    /// Bump when the stored form or the folding changes.
    static let version = 2

    public let evolution: SchemaEvolution

    public init(evolution: SchemaEvolution = SchemaEvolution()) {
        self.evolution = evolution
    }

    public var name: String { Self.projectionName }
    public var fingerprint: String { "account-details v\(Self.version); keys: \(evolution.fingerprint)" }
    public var databaseNames: [String] { ["accounts"] }

    public func apply(_ record: RecordView, to state: ProjectionState) throws {
        // Types this build does not know (written by a newer one) stay in the log for the build
        // that knows them; they never stop the cache.
        let type = record.type
        guard AccountEvent.currentSchemaVersions[type] != nil else { return }
        let event = try AccountEvent.decode(type: type, payload: record.payload)
        let keysVersion = keysVersion(of: record)
        let upcast = try evolution.upcast(event, writtenAt: keysVersion)
        let key = Array(record.streamIDBytes)
        let previous = try state.get("accounts", key: key).map { try AccountState(encoded: $0) }
        guard let next = AccountState.applying(upcast, to: previous, accountId: record.streamID,
                                               version: record.streamVersion, at: record.timestamp) else { return }
        try state.put("accounts", key: key, value: next.encoded())
    }

    private func keysVersion(of record: RecordView) -> Int {
        guard evolution.currentVersion > 1 else { return 1 }
        return record.metadata.extra[SchemaEvolution.metadataKey].flatMap(Int.init) ?? 1
    }

    /// Reads one account's state from the store's serving generation.
    public static func state(of accountId: String, in store: ProjectionStore) throws -> AccountState? {
        try store.read(projectionName) { state in
            try state.get("accounts", key: Array(accountId.utf8)).map { try AccountState(encoded: $0) }
        }
    }

    /// Calls `body` with every account's state, in account-id order.
    public static func forEachAccount(in store: ProjectionStore, _ body: (AccountState) throws -> Void) throws {
        try store.read(projectionName) { state in
            try state.withCursor("accounts") { cursor in
                var entry = try cursor.first()
                while let current = entry {
                    try body(try AccountState(encoded: Array(current.value)))
                    entry = try cursor.next()
                }
            }
        }
    }
}
