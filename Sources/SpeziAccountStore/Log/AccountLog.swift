//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import EventLogProtocol
import Foundation

/// The account store's view of the event log: one stream per account id, typed events, user ids
/// kept unique by claims, and each account's state folded from its stream.
public struct AccountLog: Sendable {
    /// The log underneath.
    public let log: any EventLogBackend
    /// The key changes, to read old events in the current shape.
    public let evolution: SchemaEvolution
    /// The per-account keys personal data is sealed with (nil: written in the clear).
    public let vault: KeyVault?

    /// Account streams on `log`, read through `evolution`, with payloads sealed by `vault` when it is given.
    public init(log: any EventLogBackend, evolution: SchemaEvolution = SchemaEvolution(), vault: KeyVault? = nil) {
        self.log = log
        self.evolution = evolution
        self.vault = vault
    }

    /// A user id as it is compared: case-insensitive and trimmed.
    public static func normalizedUserId(_ userId: String) -> String {
        userId.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// The claim that keeps a user id unique, without a vault: the normalized user id in the clear.
    public static func userIdClaim(_ userId: String) -> String {
        "userid:" + normalizedUserId(userId)
    }

    /// The claim that keeps a user id unique. With a vault it is an HMAC-SHA256 of the normalized
    /// user id under the vault's claim secret, so no e-mail address is stored in the clear.
    public func claim(forUserId userId: String) -> String {
        guard let vault else { return Self.userIdClaim(userId) }
        let mac = HMAC<SHA256>.authenticationCode(for: Array(Self.normalizedUserId(userId).utf8), using: vault.claimSecret)
        return "userid:" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Appends events to an account's stream. Every event records the actor, the correlation id and
    /// the key-set version it was written under.
    @discardableResult
    public func append(
        _ events: [AccountEvent], to accountId: String, expectedVersion: ExpectedVersion,
        metadata: EventMetadata = EventMetadata(), claims: Set<String> = [], releases: Set<String> = []
    ) async throws -> AppendResult {
        var metadata = metadata
        metadata.extra[SchemaEvolution.metadataKey] = String(evolution.currentVersion)
        var key: SymmetricKey?
        if let vault, events.contains(where: \.carriesPersonalData) {
            // Known keys come from memory; a new one is written and flushed off the cooperative pool.
            key = vault.knownKey(for: accountId)
            if key == nil { key = try await vault.offPool { try $0.makeKey(for: accountId) } }
        }
        let proposed = try events.map { event in
            var payload = event.encodedPayload()
            if let key, event.carriesPersonalData {
                payload = try Sealing.seal(payload, key: key, accountId: accountId, label: event.typeName)
            }
            return ProposedEvent(type: event.typeName, schemaVersion: event.schemaVersion, metadata: metadata, payload: Data(payload))
        }
        return try await log.append(proposed, to: accountId, expectedVersion: expectedVersion, claims: claims, releases: releases)
    }

    /// Decodes a record into an account event in the current shape.
    public func event(from record: RecordedEvent) throws -> AccountEvent {
        let event = try record.payload.withUnsafeBytes {
            try AccountEvent.decode(type: record.type, payload: $0, accountId: record.streamID, vault: vault)
        }
        let version = record.metadata.extra[SchemaEvolution.metadataKey].flatMap(Int.init) ?? 1
        return try evolution.upcast(event, writtenAt: version)
    }

    /// The account's current state from its whole stream, or nil when it never existed.
    public func load(_ accountId: String) async throws -> AccountState? {
        try await load(accountId, throughVersion: .max)
    }

    /// The account's state after the events up to stream version `version`, or nil when it did not exist then.
    public func load(_ accountId: String, throughVersion version: UInt64) async throws -> AccountState? {
        guard !accountId.isEmpty, accountId.utf8.count <= 400, !accountId.utf8.contains(0), version > 0 else { return nil }
        var state: AccountState?
        for record in try await log.readStream(accountId, from: 1, limit: version == .max ? .max : Int(clamping: version)) {
            state = AccountState.applying(
                try event(from: record), to: state, accountId: accountId,
                version: record.streamVersion, at: record.timestamp)
        }
        return state
    }

    /// The account that holds a user id (deleted accounts release theirs).
    public func accountId(forUserId userId: String) async throws -> String? {
        try await log.claimOwner(claim(forUserId: userId))
    }
}
