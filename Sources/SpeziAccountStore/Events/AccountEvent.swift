//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Foundation

/// Account values as they travel in events: each value encoded (JSON) under its key's stable identifier.
///
/// Values of keys the running code does not know stay in this map untouched, so nothing a newer
/// schema wrote is ever dropped. A decoded value may be a slice of a larger buffer (one copy of
/// the payload it came from): index it from its `startIndex`, not from 0.
public typealias EncodedAccountValues = [String: Data]

/// A typed, versioned account event: what the store appends to an account's stream.
///
/// Each case has a stable type name (``typeName``) and a schema version (``schemaVersion``); both
/// are written into the log record, and the payload layout of every case is documented in
/// FORMAT.md. Plaintext passwords never appear here: only ``PasswordHasher`` strings.
///
/// Each case has a ``Kind``, and each kind one entry in the event catalogue
/// (``Kind/declaration``): its name, schema version, payload fields and what it does to the
/// account, from which the lists and the decoding here are derived.
public enum AccountEvent: Sendable, Equatable {
    /// A signup (or an anonymous sign-in, when `isAnonymous`).
    case accountCreated(userId: String, passwordHash: String?, isAnonymous: Bool, values: EncodedAccountValues)
    /// An anonymous account became a regular one (a signup on top of it); it keeps its account id.
    case anonymousAccountUpgraded(userId: String, passwordHash: String?, values: EncodedAccountValues)
    /// Details were changed: new values for `modified`, and the identifiers in `removed` were cleared.
    case detailsModified(modified: EncodedAccountValues, removed: [String])
    /// The password was changed; carries the new hash.
    case passwordChanged(passwordHash: String)
    /// The user id changed from `old` to `new`.
    case userIdChanged(old: String, new: String)
    /// The account was deleted.
    case accountDeleted
    /// A login succeeded.
    case loginSucceeded
    /// A login failed; `reason` is a short machine-readable word such as `wrongPassword` or `lockedOut`.
    case loginFailed(reason: String)
    /// The account was logged out.
    case loggedOut
    /// A password reset was requested: the SHA-256 (hex) of the single-use token delivered to the
    /// owner, and when it expires (µs since 1970). The token itself is never logged.
    case passwordResetRequested(tokenHash: String, expiresAtMicros: Int64)
    /// A session began: the SHA-256 (hex) of its bearer token's secret, and when it expires (µs since
    /// 1970). The token itself is never logged.
    case sessionStarted(sessionHash: String, expiresAtMicros: Int64)
    /// A session ended before it expired: `reason` is `logout`, `revoked` (ended from the session
    /// list, by its owner or an administrator), `password-changed`, `password-reset`
    /// or `account-deleted`.
    case sessionEnded(sessionHash: String, reason: String)
    /// Values of keys the account service does not store itself, written by the log-backed storage
    /// provider (``EventSourcedStorageProvider``): new values for `modified`, `removed` cleared.
    case externalDetailsModified(modified: EncodedAccountValues, removed: [String])
    /// The storage provider's record of the account was deleted: all its external values are gone.
    case externalDetailsErased
    /// The store replaced the stored hash of the password with one of the configured algorithm
    /// and parameters, at a successful login: the password is the same, so unlike
    /// ``passwordChanged(passwordHash:)`` it is no change of the owner's (no change budget spent,
    /// open reset requests kept).
    case passwordRehashed(passwordHash: String)
    /// A sign-in with an OpenID Connect provider was linked to the account: the provider's issuer
    /// (`iss`) and the holder's id there (`sub`). The pair belongs to at most one account (a claim,
    /// as user ids are), and signs that account in.
    case identityLinked(issuer: String, subject: String)
    /// A provider identity was unlinked: it no longer signs the account in, and its claim is released.
    case identityUnlinked(issuer: String, subject: String)
    /// The client a session was opened from, beside its ``sessionStarted(sessionHash:expiresAtMicros:)``
    /// in the same append: the SHA-256 (hex) of the session's bearer token's secret, the client's
    /// address as the server saw it (an IPv6 client's /64 group) and its `User-Agent`, each
    /// possibly empty. Personal data, so sealed: shredding the account erases it.
    case sessionClient(sessionHash: String, address: String, userAgent: String)
    /// A TOTP second factor (RFC 6238) was enrolled, not confirmed yet: its shared secret (base32),
    /// HMAC algorithm (`SHA1`, `SHA256`, `SHA512`), digits and period, and the hashes of its
    /// recovery codes (``AccountStore/recoveryCodeHash(_:accountId:)``). Personal data, so sealed:
    /// shredding the account erases the secret. A new enrolment replaces one not confirmed.
    case totpEnrolled(secret: String, algorithm: String, digits: UInt64, period: UInt64, recoveryCodeHashes: [String])
    /// The enrolled TOTP was confirmed by a first valid code, of time step `step`: from now on
    /// sign-in needs a code.
    case totpConfirmed(step: UInt64)
    /// A TOTP code of time step `step` was accepted (at sign-in or for a removal): no code of this
    /// step or an earlier one is accepted again.
    case totpUsed(step: UInt64)
    /// A recovery code was used (its hash): it is not accepted again.
    case recoveryCodeUsed(codeHash: String)
    /// The TOTP second factor was removed; `reason` is `code` or `recovery-code` (what proved it).
    case totpRemoved(reason: String)
    /// A provider's refresh token for the account's identity of `issuer` (Sign in with Apple's,
    /// from the authorization code the app sent at sign-in or linking), kept so that the account's
    /// deletion or the identity's unlinking can revoke it at the provider, as Apple requires.
    /// `token` is sealed under a key of the store's vault, not the account's, so that it can still
    /// be revoked after the account's key is destroyed (`v1:` and base64; `plain:` in a store
    /// without a vault).
    case providerTokenStored(issuer: String, token: String)
    /// The provider confirmed the revocation of the account's token of `issuer` (or said it was
    /// invalid already): nothing is left to revoke.
    case providerTokenRevoked(issuer: String)
    /// An administrator disabled the account, for `reason`: its sessions end in the same append,
    /// and it cannot sign in (answered as a locked account) until it is enabled again. The account
    /// holds the claim `disabled:<account id>` meanwhile. Personal data (the reason may name the
    /// owner), so sealed.
    case accountDisabled(reason: String)
    /// An administrator enabled a disabled account again, for `reason` (its claim is released).
    case accountEnabled(reason: String)
    /// An event of this type whose personal data can no longer be read: the account was deleted
    /// and its key destroyed (crypto-shredding). It is never appended; replay yields it.
    case redacted(type: String)

    /// Every event type name this version writes, with its current schema version (from the
    /// catalogue, ``Kind/declaration``).
    public static let currentSchemaVersions: [String: UInt32] = Dictionary(
        uniqueKeysWithValues: Kind.allCases.map { ($0.name, $0.declaration.schemaVersion) })

    /// The event's kind; for a redacted event, the kind its type name names (nil for a type this
    /// version does not know).
    public var kind: Kind? {
        switch self {
        case .accountCreated: .accountCreated
        case .anonymousAccountUpgraded: .anonymousAccountUpgraded
        case .detailsModified: .detailsModified
        case .passwordChanged: .passwordChanged
        case .userIdChanged: .userIdChanged
        case .accountDeleted: .accountDeleted
        case .loginSucceeded: .loginSucceeded
        case .loginFailed: .loginFailed
        case .loggedOut: .loggedOut
        case .passwordResetRequested: .passwordResetRequested
        case .sessionStarted: .sessionStarted
        case .sessionEnded: .sessionEnded
        case .externalDetailsModified: .externalDetailsModified
        case .externalDetailsErased: .externalDetailsErased
        case .passwordRehashed: .passwordRehashed
        case .identityLinked: .identityLinked
        case .identityUnlinked: .identityUnlinked
        case .sessionClient: .sessionClient
        case .totpEnrolled: .totpEnrolled
        case .totpConfirmed: .totpConfirmed
        case .totpUsed: .totpUsed
        case .recoveryCodeUsed: .recoveryCodeUsed
        case .totpRemoved: .totpRemoved
        case .providerTokenStored: .providerTokenStored
        case .providerTokenRevoked: .providerTokenRevoked
        case .accountDisabled: .accountDisabled
        case .accountEnabled: .accountEnabled
        case let .redacted(type): Kind(name: type)
        }
    }

    /// The stable type name written to the log.
    public var typeName: String {
        if case let .redacted(type) = self { return type }
        // Every case but `redacted` has a kind.
        return kind?.name ?? ""
    }

    /// The event types this version knows, without their payloads: decoding dispatches on it, and a
    /// projection can match a record's type bytes against it without making a String. Each kind
    /// is declared in the event catalogue (``declaration``).
    public enum Kind: UInt8, CaseIterable, Sendable {
        case accountCreated, anonymousAccountUpgraded, detailsModified, passwordChanged, userIdChanged, accountDeleted
        case loginSucceeded, loginFailed, loggedOut, passwordResetRequested, sessionStarted, sessionEnded
        case externalDetailsModified, externalDetailsErased
        case passwordRehashed
        case identityLinked, identityUnlinked
        case sessionClient
        case totpEnrolled, totpConfirmed, totpUsed, recoveryCodeUsed, totpRemoved
        case providerTokenStored, providerTokenRevoked
        case accountDisabled, accountEnabled

        /// The type name written to the log.
        public var name: String { declaration.name }

        /// The kind of a type name, or nil for one this version does not know.
        ///
        /// - Parameter name: A type name as the log records it (`account.created` …).
        public init?(name: String) {
            var name = name
            guard let kind = name.withUTF8({ Kind(nameBytes: UnsafeRawBufferPointer($0)) }) else { return nil }
            self = kind
        }

        /// The kind of a type name given as UTF-8 bytes, or nil for one this version does not know.
        ///
        /// - Parameter nameBytes: The type name's UTF-8 bytes, compared byte by byte; they are not copied.
        public init?(nameBytes: UnsafeRawBufferPointer) {
            for (index, candidate) in Self.nameBytes.enumerated() where candidate.count == nameBytes.count {
                let same = candidate.withUnsafeBytes { memcmp($0.baseAddress!, nameBytes.baseAddress!, nameBytes.count) == 0 }
                if same {
                    self.init(rawValue: UInt8(index))
                    return
                }
            }
            return nil
        }

        // In case order.
        private static let nameBytes = catalogue.map { Array($0.name.utf8) }
    }

    /// Whether the payload holds personal data, so that the store seals it with the account's key.
    public var carriesPersonalData: Bool {
        if case .redacted = self { return false }
        return kind?.declaration.carriesPersonalData ?? false
    }

    /// The schema version of this event's payload layout.
    public var schemaVersion: UInt32 {
        kind?.declaration.schemaVersion ?? 1
    }

    /// Whether this event begins an account's state afresh (a signup, or a signup that can no
    /// longer be read) rather than changing the one before it.
    var startsAccount: Bool {
        switch self {
        case .accountCreated, .redacted("account.created"): true
        default: false
        }
    }

    /// Whether this event changes the account's own state (as opposed to an audit-only security
    /// event, or the storage provider's external values, which have their own view).
    public var changesAccountState: Bool {
        if case .redacted = self { return true }
        return kind?.declaration.changesAccountState ?? true
    }

    /// The user id the event sets: a signup's or an upgrade's (empty for an anonymous account), or
    /// the new one of a user id change; nil for the other events (a redacted one included).
    var userIdSet: String? {
        switch self {
        case let .accountCreated(userId, _, _, _), let .anonymousAccountUpgraded(userId, _, _): userId
        case let .userIdChanged(_, new): new
        case .detailsModified, .passwordChanged, .accountDeleted, .loginSucceeded, .loginFailed, .loggedOut, .passwordResetRequested,
            .sessionStarted, .sessionEnded, .externalDetailsModified, .externalDetailsErased, .passwordRehashed, .identityLinked,
            .identityUnlinked, .sessionClient, .totpEnrolled, .totpConfirmed, .totpUsed, .recoveryCodeUsed, .totpRemoved,
            .providerTokenStored, .providerTokenRevoked, .accountDisabled, .accountEnabled, .redacted:
            nil
        }
    }

    /// Encodes the payload (the type name and schema version travel in the log record), field by
    /// field as the kind's declaration lists them.
    ///
    /// - Returns: The payload bytes at the current schema version, not sealed; empty for an event
    ///   without fields.
    public func encodedPayload() -> [UInt8] {
        guard let kind, !isRedacted else { return PayloadWriter().bytes }
        var writer = PayloadFieldWriter(fields: kind.declaration.fields)
        switch self {
        case let .accountCreated(userId, passwordHash, isAnonymous, values):
            writer.string(userId)
            writer.optionalString(passwordHash)
            writer.bool(isAnonymous)
            writer.values(values)
        case let .anonymousAccountUpgraded(userId, passwordHash, values):
            writer.string(userId)
            writer.optionalString(passwordHash)
            writer.values(values)
        case let .detailsModified(modified, removed), let .externalDetailsModified(modified, removed):
            writer.values(modified)
            writer.strings(removed)
        case let .passwordChanged(passwordHash), let .passwordRehashed(passwordHash):
            writer.string(passwordHash)
        case let .userIdChanged(old, new):
            writer.string(old)
            writer.string(new)
        case let .loginFailed(reason):
            writer.string(reason)
        case let .passwordResetRequested(tokenHash, expiresAtMicros):
            writer.string(tokenHash)
            writer.varint(UInt64(bitPattern: expiresAtMicros))
        case let .sessionStarted(sessionHash, expiresAtMicros):
            writer.string(sessionHash)
            writer.varint(UInt64(bitPattern: expiresAtMicros))
        case let .sessionEnded(sessionHash, reason):
            writer.string(sessionHash)
            writer.string(reason)
        case let .identityLinked(issuer, subject), let .identityUnlinked(issuer, subject):
            writer.string(issuer)
            writer.string(subject)
        case let .sessionClient(sessionHash, address, userAgent):
            writer.string(sessionHash)
            writer.string(address)
            writer.string(userAgent)
        case let .totpEnrolled(secret, algorithm, digits, period, hashes):
            writer.string(secret)
            writer.string(algorithm)
            writer.varint(digits)
            writer.varint(period)
            writer.strings(hashes)
        case let .totpConfirmed(step), let .totpUsed(step):
            writer.varint(step)
        case let .recoveryCodeUsed(hash):
            writer.string(hash)
        case let .totpRemoved(reason):
            writer.string(reason)
        case let .providerTokenStored(issuer, token):
            writer.string(issuer)
            writer.string(token)
        case let .providerTokenRevoked(issuer):
            writer.string(issuer)
        case let .accountDisabled(reason), let .accountEnabled(reason):
            writer.string(reason)
        case .accountDeleted, .loginSucceeded, .loggedOut, .externalDetailsErased, .redacted:
            break
        }
        return writer.finish()
    }

    /// Whether this is ``redacted(type:)``.
    private var isRedacted: Bool {
        if case .redacted = self { return true }
        return false
    }

    /// Decodes a payload of the given type name at the current schema version.
    ///
    /// Older schema versions are turned into the current shape by upcasters before they reach here.
    ///
    /// - Parameters:
    ///   - type: The record's type name.
    ///   - payload: The record's payload, unsealed.
    /// - Returns: The event the payload describes.
    /// - Throws: ``PayloadDecodingError/unknownEventType(_:)`` for a type name this version does not
    ///   know; another ``PayloadDecodingError`` when the payload is cut short, has bytes left over or a
    ///   field that does not parse.
    public static func decode(type: String, payload: UnsafeRawBufferPointer) throws -> AccountEvent {
        guard let kind = Kind(name: type) else { throw PayloadDecodingError.unknownEventType(type) }
        return try decode(kind, payload: payload)
    }

    /// Decodes a payload of the given kind at the current schema version.
    ///
    /// - Parameters:
    ///   - kind: The event type, which fixes the payload's layout.
    ///   - payload: The record's payload, unsealed.
    /// - Returns: The event the payload describes.
    /// - Throws: ``PayloadDecodingError`` when the payload is cut short, has bytes left over, a length
    ///   beyond the limits, text that is not UTF-8 or an encoding version newer than this code.
    public static func decode(_ kind: Kind, payload: UnsafeRawBufferPointer) throws -> AccountEvent {
        let declaration = kind.declaration
        var fields = PayloadFieldReader(try PayloadReader(payload), fields: declaration.fields)
        let event = try declaration.make(&fields)
        try fields.finish()
        return event
    }

    /// Decodes a payload that may be sealed with the account's key: a sealed payload opens with the
    /// vault's key, and decodes to ``redacted(type:)`` when that key was destroyed or is missing.
    ///
    /// - Parameters:
    ///   - type: The record's type name.
    ///   - payload: The record's payload, sealed or not.
    ///   - accountId: The account whose key seals the payload (the record's stream).
    ///   - vault: The store's key vault; nil treats every sealed payload as unreadable.
    /// - Returns: The event, or ``redacted(type:)`` for a sealed payload whose key is gone.
    /// - Throws: ``PayloadDecodingError`` for an unknown type name or a payload that does not parse,
    ///   ``KeyVaultError`` when the vault cannot be read, or an error when a sealed payload is damaged
    ///   or fails its authentication check.
    public static func decode(type: String, payload: UnsafeRawBufferPointer, accountId: String, vault: KeyVault?) throws -> AccountEvent {
        guard let kind = Kind(name: type) else { throw PayloadDecodingError.unknownEventType(type) }
        return try decode(kind, payload: payload, accountId: accountId, vault: vault)
    }

    /// Decodes a payload of the given kind that may be sealed with the account's key (see
    /// ``decode(type:payload:accountId:vault:)``); the account id is asked for only to open a sealed payload.
    ///
    /// - Parameters:
    ///   - kind: The event type, which fixes the payload's layout.
    ///   - payload: The record's payload, sealed or not.
    ///   - accountId: The account whose key seals the payload; evaluated only for a sealed payload.
    ///   - vault: The store's key vault; nil treats every sealed payload as unreadable.
    /// - Returns: The event, or ``redacted(type:)`` for a sealed payload whose key is gone.
    /// - Throws: ``PayloadDecodingError`` for a payload that does not parse, ``KeyVaultError`` when the
    ///   vault cannot be read, or an error when a sealed payload is damaged or fails its
    ///   authentication check.
    public static func decode(
        _ kind: Kind, payload: UnsafeRawBufferPointer, accountId: @autoclosure () -> String, vault: KeyVault?
    ) throws -> AccountEvent {
        guard Sealing.isSealed(payload) else { return try decode(kind, payload: payload) }
        let accountId = accountId()
        guard let key = try vault?.key(for: accountId) else { return .redacted(type: kind.name) }
        let plain = try Sealing.open(payload, key: key, accountId: accountId, label: kind.name)
        return try plain.withUnsafeBytes { try decode(kind, payload: $0) }
    }

    /// Decodes a payload held in an array.
    ///
    /// - Parameters:
    ///   - type: The record's type name.
    ///   - payload: The record's payload, unsealed.
    /// - Returns: The event the payload describes.
    /// - Throws: ``PayloadDecodingError``, for an unknown type name or a payload that does not parse.
    public static func decode(type: String, payload: [UInt8]) throws -> AccountEvent {
        try payload.withUnsafeBytes { try decode(type: type, payload: $0) }
    }
}
