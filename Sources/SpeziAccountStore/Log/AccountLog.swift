//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation
import Projections

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
    ///
    /// - Parameters:
    ///   - log: The event log that holds the account streams.
    ///   - evolution: The key changes to apply when reading; none by default.
    ///   - vault: The key vault to seal personal data with, or nil to write it in the clear.
    public init(log: any EventLogBackend, evolution: SchemaEvolution = SchemaEvolution(), vault: KeyVault? = nil) {
        self.log = log
        self.evolution = evolution
        self.vault = vault
    }

    /// A user id as it is compared: the profile of ``UserIdNormalization`` (NFKC, full case
    /// folding, NFKC, trimmed).
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: Its normalized form, the one uniqueness is checked on.
    public static func normalizedUserId(_ userId: String) -> String {
        UserIdNormalization.normalized(userId)
    }

    /// The claim that keeps a user id unique, without a vault: the normalized user id in the clear.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: `userid:` followed by the normalized user id.
    public static func userIdClaim(_ userId: String) -> String {
        "userid:" + normalizedUserId(userId)
    }

    /// The claim that keeps a user id unique. With a vault it is an HMAC-SHA256 of the normalized
    /// user id under the vault's claim secret, so no e-mail address is stored in the clear.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The claim name: `userid:` and the normalized user id, or its HMAC in hex with a vault.
    public func claim(forUserId userId: String) -> String {
        claim(ofNormalized: Self.normalizedUserId(userId))
    }

    /// The claim of `userId` as it was written before ``UserIdNormalization``: of the user id
    /// trimmed and `lowercased()`. Accounts created then hold this claim; it equals
    /// ``claim(forUserId:)`` for most user ids (those that are NFKC, with no letter that case
    /// folding maps other than `lowercased()` does).
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The claim name of the older form: in the clear without a vault, an HMAC in hex with one.
    public func legacyClaim(forUserId userId: String) -> String {
        claim(ofNormalized: UserIdNormalization.legacyNormalized(userId))
    }

    /// The claims that keep look-alike user ids apart: for each of the user id's confusable
    /// skeletons (``UserIdNormalization/skeletons(_:)``, usually one), `userid-skeleton:` followed
    /// by the skeleton, or with a vault by the HMAC-SHA256 of the skeleton under the vault's claim
    /// secret. Accounts whose user ids were set since the store checks look-alikes hold them
    /// beside their user id's claim.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: One or two claim names.
    public func skeletonClaims(forUserId userId: String) -> Set<String> {
        Set(
            UserIdNormalization.skeletons(userId).map { skeleton in
                guard let vault else { return Self.skeletonClaimPrefix + skeleton }
                return Self.skeletonClaimPrefix + HMAC<SHA256>.authenticationCode(for: Array(skeleton.utf8), using: vault.claimSecret).hexString
            })
    }

    /// The prefix of skeleton claims.
    public static let skeletonClaimPrefix = "userid-skeleton:"

    /// The claims a new user id takes: its own (``claim(forUserId:)``) and its skeletons'
    /// (``skeletonClaims(forUserId:)``).
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: Two or three claim names.
    public func newClaims(forUserId userId: String) -> Set<String> {
        skeletonClaims(forUserId: userId).union([claim(forUserId: userId)])
    }

    /// The claims an account with this user id may hold: the current one, the one written before
    /// ``UserIdNormalization`` when it differs, and its skeleton's. What a change of user id or a
    /// deletion releases (a release of a claim the account does not hold changes nothing).
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: Two to four claim names.
    public func claims(forUserId userId: String) -> Set<String> {
        skeletonClaims(forUserId: userId).union([claim(forUserId: userId), legacyClaim(forUserId: userId)])
    }

    /// The prefix of identity claims.
    public static let identityClaimPrefix = "identity:"

    /// The claim that keeps a provider identity on one account: `identity:` and the SHA-256 in hex
    /// of the issuer's UTF-8 bytes, a NUL byte and the subject's, or with a vault the HMAC-SHA256
    /// of those bytes under the vault's claim secret (so the claim stays within the log's 500 bytes
    /// and names no one in the clear).
    ///
    /// - Parameters:
    ///   - issuer: The provider's issuer (`iss`).
    ///   - subject: The holder's id at the provider (`sub`).
    /// - Returns: The claim name.
    public func identityClaim(issuer: String, subject: String) -> String {
        let bytes = Array(issuer.utf8) + [0] + Array(subject.utf8)
        guard let vault else { return Self.identityClaimPrefix + SHA256.hash(data: bytes).hexString }
        return Self.identityClaimPrefix + HMAC<SHA256>.authenticationCode(for: bytes, using: vault.claimSecret).hexString
    }

    /// The account a provider identity signs in, or nil when none holds its claim.
    ///
    /// - Parameters:
    ///   - issuer: The provider's issuer.
    ///   - subject: The holder's id at the provider.
    /// - Returns: The id of the account holding the identity's claim.
    /// - Throws: The log's `EventLogError` when the claim cannot be looked up.
    public func accountId(forIssuer issuer: String, subject: String) async throws -> String? {
        try await log.claimOwner(identityClaim(issuer: issuer, subject: subject))
    }

    private func claim(ofNormalized normalized: String) -> String {
        guard let vault else { return "userid:" + normalized }
        let mac = HMAC<SHA256>.authenticationCode(for: Array(normalized.utf8), using: vault.claimSecret)
        return "userid:" + mac.hexString
    }

    /// Appends events to an account's stream. Every event records the actor, the correlation id and
    /// the key-set version it was written under.
    ///
    /// - Parameters:
    ///   - events: The events to append, in order; they are committed together or not at all.
    ///   - accountId: The account, whose id is the stream id.
    ///   - expectedVersion: The stream version the append requires (optimistic concurrency).
    ///   - metadata: The actor and correlation id to record; the key-set version is added to it.
    ///   - claims: Unique keys (user-id claims) the stream takes with this append.
    ///   - releases: Claims the stream gives up with this append.
    /// - Returns: What the log reports: the positions of the first and last event, and the stream's
    ///   version after the append.
    /// - Throws: The log's `EventLogError`: `wrongExpectedVersion` when the stream is not at
    ///   `expectedVersion`, `claimTaken` when another stream holds one of `claims`, or a storage
    ///   failure; ``KeyVaultError`` when the account's key cannot be made. Nothing is appended then.
    @discardableResult
    public func append(
        _ events: [AccountEvent], to accountId: String, expectedVersion: ExpectedVersion,
        metadata: EventMetadata = EventMetadata(), claims: Set<String> = [], releases: Set<String> = []
    ) async throws -> AppendResult {
        try await append(
            events, to: accountId, expectedVersion: expectedVersion, metadata: metadata, claims: claims, releases: releases, eventIDs: nil)
    }

    /// ``append(_:to:expectedVersion:metadata:claims:releases:)`` with the events' ids given
    /// (`eventIDs`, one per event: a keyed command's derived ids, whose repeated append is a no-op)
    /// or time-ordered ones (nil).
    func append(
        _ events: [AccountEvent], to accountId: String, expectedVersion: ExpectedVersion,
        metadata: EventMetadata, claims: Set<String>, releases: Set<String>, eventIDs: [UUID]?
    ) async throws -> AppendResult {
        var metadata = metadata
        metadata.extra[SchemaEvolution.metadataKey] = String(evolution.currentVersion)
        var key: SymmetricKey?
        if let vault, events.contains(where: \.carriesPersonalData) {
            // Known keys come from memory; a new one is written and flushed off the cooperative pool.
            key = vault.knownKey(for: accountId)
            if key == nil { key = try await vault.offPool { try $0.makeKey(for: accountId) } }
        }
        precondition(eventIDs == nil || eventIDs!.count == events.count, "one event id per event")
        let proposed = try events.indices.map { index in
            let event = events[index]
            var payload = event.encodedPayload()
            if let key, event.carriesPersonalData {
                payload = try Sealing.seal(payload, key: key, accountId: accountId, label: event.typeName)
            }
            return ProposedEvent(
                eventID: eventIDs?[index] ?? .timeOrdered(), type: event.typeName, schemaVersion: event.schemaVersion, metadata: metadata,
                payload: Data(payload))
        }
        // A leaf span (the commit itself runs on the writer's thread): the command's span is its parent.
        let span = StoreTracing.startSpan("log.append")
        defer { span?.end() }
        span?.attributes["account.id"] = accountId
        span?.attributes["log.events"] = events.count
        do {
            let result = try await log.append(proposed, to: accountId, expectedVersion: expectedVersion, claims: claims, releases: releases)
            span?.attributes["log.position"] = Int(clamping: result.positions.upperBound)
            return result
        } catch {
            span?.recordError(error)
            throw error
        }
    }

    /// Decodes a record into an account event in the current shape.
    ///
    /// - Parameter record: A record of an account stream.
    /// - Returns: The decoded event in the current key set's shape, or ``AccountEvent/redacted(type:)``
    ///   when its sealed payload can no longer be opened.
    /// - Throws: ``PayloadDecodingError`` for a payload that does not parse, ``KeyVaultError`` when the
    ///   vault cannot be read, an error for a damaged seal, or ``SchemaEvolution/UpcastError``.
    public func event(from record: RecordedEvent) throws -> AccountEvent {
        let event = try record.payload.withUnsafeBytes {
            try AccountEvent.decode(type: record.type, payload: $0, accountId: record.streamID, vault: vault)
        }
        let version = record.metadata.extra[SchemaEvolution.metadataKey].flatMap(Int.init) ?? 1
        return try evolution.upcast(event, writtenAt: version)
    }

    /// The account's current state from its whole stream, or nil when it never existed.
    ///
    /// - Parameter accountId: The account, whose id is the stream id.
    /// - Returns: The state folded from every event of the stream, or nil for a stream with no events.
    /// - Throws: The log's `EventLogError` when the stream cannot be read, or the decoding errors of
    ///   ``event(from:)``.
    public func load(_ accountId: String) async throws -> AccountState? {
        try await load(accountId, throughVersion: .max)
    }

    /// The account's state after the events up to stream version `version`, or nil when it did not exist then.
    ///
    /// - Parameters:
    ///   - accountId: The account, whose id is the stream id.
    ///   - version: The last stream version to fold in; zero gives nil.
    /// - Returns: The state as of `version`, or nil when no event up to it exists (also for an account
    ///   id the log could not hold: empty, longer than 400 bytes or with a NUL byte).
    /// - Throws: The log's `EventLogError` when the stream cannot be read, or the decoding errors of
    ///   ``event(from:)``.
    public func load(_ accountId: String, throughVersion version: UInt64) async throws -> AccountState? {
        try await load(accountId, after: nil, throughVersion: version)
    }

    /// `state` brought up to date: the stream's events after its version, up to `version`,
    /// applied to it (nil: folded from the first event). The state must be the account's as of
    /// its version (a fold, or the details cache's, which equals it).
    ///
    /// - Parameters:
    ///   - accountId: The account, whose id is the stream id.
    ///   - state: The account's state as of its version, or nil to start from nothing.
    ///   - version: The last stream version to apply.
    /// - Returns: The state as of `version` (or the stream's last), `state` itself when no event
    ///   follows it, nil for an account id the log could not hold (``couldBeStream(_:)``).
    /// - Throws: The log's `EventLogError` when the stream cannot be read, or the decoding errors of
    ///   ``event(from:)``.
    package func load(_ accountId: String, after state: AccountState?, throughVersion version: UInt64 = .max) async throws -> AccountState? {
        guard Self.couldBeStream(accountId) else { return nil }
        let first = (state?.version ?? 0) + 1
        guard version >= first else { return state }
        var state = state
        let limit = version == .max ? .max : Int(clamping: version - first + 1)
        for record in try await log.readStream(accountId, from: first, limit: limit) {
            state = AccountState.applying(
                try event(from: record), to: state, accountId: accountId,
                version: record.streamVersion, at: record.timestamp)
        }
        return state
    }

    /// Whether `accountId` could be a stream id (1–400 bytes of UTF-8 without NUL): an id that
    /// cannot is no account, answered without asking the log or the details cache.
    ///
    /// - Parameter accountId: The id to check.
    /// - Returns: True when the log could hold a stream of that id.
    package static func couldBeStream(_ accountId: String) -> Bool {
        accountId.streamIDProblem == nil
    }

    /// The account that holds a user id (deleted accounts release theirs).
    ///
    /// An account created before ``UserIdNormalization`` holds the claim of its user id trimmed and
    /// lowercased; that claim of `userId` (``legacyClaim(forUserId:)``) is looked up first, then the
    /// claim of the normalized user id. So each older account is still found under the user id it
    /// was created with, also when two of them now normalize the same (`accountctl verify` names
    /// those), and every other spelling of a user id finds the account that holds the normalized
    /// one. A user id the store refuses (``UserIdNormalization/refusal(of:)``) is looked up only
    /// under the older claim: it finds an account only if one was created with it before.
    ///
    /// - Parameter userId: A user id in any spelling.
    /// - Returns: The id of the account holding the user id's claim, or nil when none does.
    /// - Throws: The log's `EventLogError` when a claim cannot be looked up.
    public func accountId(forUserId userId: String) async throws -> String? {
        let legacyNormalized = UserIdNormalization.legacyNormalized(userId)
        let legacy = claim(ofNormalized: legacyNormalized)
        guard UserIdNormalization.isLookupAcceptable(userId) else { return try await log.claimOwner(legacy) }
        let normalized = Self.normalizedUserId(userId)
        // The same bytes (every ASCII user id): the same claim, one lookup and one HMAC. Bytes, not
        // `==`, which holds for canonically equivalent strings whose claims differ.
        if normalized.utf8.elementsEqual(legacyNormalized.utf8) { return try await log.claimOwner(legacy) }
        let current = claim(ofNormalized: normalized)
        if legacy != current, let owner = try await log.claimOwner(legacy) { return owner }
        return try await log.claimOwner(current)
    }

    /// Another account that holds the older claim of `userId` (``legacyClaim(forUserId:)``) when it
    /// differs from the current one: an account created before ``UserIdNormalization`` under this
    /// spelling, which a new claim would not collide with.
    func legacyHolder(ofUserId userId: String, other accountId: String?) async throws -> String? {
        let legacy = legacyClaim(forUserId: userId)
        guard legacy != claim(forUserId: userId), let owner = try await log.claimOwner(legacy), owner != accountId else { return nil }
        return owner
    }
}
