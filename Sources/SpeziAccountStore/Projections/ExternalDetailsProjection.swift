//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Projections

/// The external-storage view: per account, the values of the keys its account service does not
/// store itself, folded from the `external.*` events that ``EventSourcedStorageProvider`` appends.
/// An account's deletion (either `external.details-erased` or `account.deleted`) removes its entry.
public struct ExternalDetailsProjection: Projection {
    /// The name the projection is registered under.
    public static let projectionName = "external-details"
    /// Bump when the stored form or the folding changes.
    static let version = 1

    /// The upcasters applied to old events while replaying.
    public let evolution: SchemaEvolution
    /// The per-account keys: stored values are sealed with them.
    public let vault: KeyVault?

    /// A view of external values reading events through `evolution`, sealing values with `vault` when given.
    ///
    /// - Parameters:
    ///   - evolution: The key changes to apply to old events; none by default.
    ///   - vault: The key vault whose keys seal the stored values, or nil to store them in the clear.
    public init(evolution: SchemaEvolution = SchemaEvolution(), vault: KeyVault? = nil) {
        self.evolution = evolution
        self.vault = vault
    }

    /// The projection name.
    public var name: String { Self.projectionName }
    /// Changes with the projection version and the evolution; a change triggers a rebuild.
    public var fingerprint: String { "external-details v\(Self.version); keys: \(evolution.fingerprint)" }
    /// The LMDB databases it keeps.
    public var databaseNames: [String] { ["external"] }

    /// Applies one `external.*` record to its account's values.
    ///
    /// - Parameters:
    ///   - record: The next record of the log; only external-details records and deletions count.
    ///   - state: The projection's storage, which holds each account's values.
    ///   - batch: Unused: the view keeps no state between records.
    /// - Throws: ``PayloadDecodingError`` for a payload that does not parse,
    ///   ``SchemaEvolution/UpcastError`` when an upcast fails, ``KeyVaultError`` when a key cannot be
    ///   read, or the storage's error. The projection stops at the record then.
    public func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        let type = record.type
        guard type == "external.details-modified" || type == "external.details-erased" || type == "account.deleted" else { return }
        let keysVersion = evolution.currentVersion > 1 ? record.metadata.extra[SchemaEvolution.metadataKey].flatMap(Int.init) ?? 1 : 1
        let accountId = record.streamID
        let decoded = try record.withPayload { try AccountEvent.decode(type: type, payload: $0, accountId: accountId, vault: vault) }
        let event = try evolution.upcast(decoded, writtenAt: keysVersion)
        let key = record.withStreamIDBytes { Array($0) }
        switch event {
        case let .externalDetailsModified(modified, removed):
            var values = try state.get("external", key: key).map { try Self.decodeValues($0, accountId: accountId, vault: vault) } ?? [:]
            values.merge(modified) { _, new in new }
            for identifier in removed { values[identifier] = nil }
            try state.put("external", key: key, value: try Self.encodeValues(values, accountId: accountId, vault: vault))
        case .externalDetailsErased, .accountDeleted:
            try state.delete("external", key: key)
        default:
            return
        }
    }

    /// The externally stored values of one account (empty when none are stored).
    ///
    /// - Parameters:
    ///   - accountId: The account to read.
    ///   - store: The projection store that runs this projection.
    ///   - vault: The key vault that opens sealed values; values whose key is gone read as none.
    /// - Returns: The stored values by key identifier, still encoded.
    /// - Throws: `ProjectionError` when the store is closed or does not run this projection,
    ///   ``PayloadDecodingError`` for stored values that do not parse, ``KeyVaultError``, or an error
    ///   for a damaged seal.
    public static func values(of accountId: String, in store: ProjectionStore, vault: KeyVault? = nil) throws -> EncodedAccountValues {
        try store.read(projectionName) { state in
            try state.get("external", key: Array(accountId.utf8)).map { try decodeValues($0, accountId: accountId, vault: vault) } ?? [:]
        }
    }

    static func encodeValues(_ values: EncodedAccountValues, accountId: String, vault: KeyVault?) throws -> [UInt8] {
        var writer = PayloadWriter()
        writer.values(values)
        guard let key = try vault?.key(for: accountId) else { return writer.bytes }
        return try Sealing.seal(writer.bytes, key: key, accountId: accountId, label: "external")
    }

    /// Reads stored values; sealed values whose key was destroyed read as none.
    static func decodeValues(_ stored: [UInt8], accountId: String, vault: KeyVault?) throws -> EncodedAccountValues {
        var bytes = stored
        if stored.first == Sealing.version {
            guard let key = try vault?.key(for: accountId) else { return [:] }
            bytes = try stored.withUnsafeBytes { try Sealing.open($0, key: key, accountId: accountId, label: "external") }
        }
        return try bytes.withUnsafeBytes { raw in
            var reader = try PayloadReader(raw)
            let values = try reader.values("values")
            try reader.finish()
            return values
        }
    }
}
