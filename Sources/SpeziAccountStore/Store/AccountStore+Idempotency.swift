//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation

/// The commands a ``AccountStore/Context/idempotencyKey`` makes repeatable: each derives the ids
/// of its events (and, for a signup, the new account's id; for a session, its secret) from the
/// key, so that a retry appends nothing and answers as the first attempt did.
public enum KeyedCommand: String, Sendable, CaseIterable {
    /// ``AccountStore/signup(_:context:)``: the account id and the `account.created` event.
    case signup
    /// ``AccountStore/signInAnonymously(context:)``.
    case anonymousSignup
    /// ``AccountStore/modify(_:_:context:)``.
    case modify
    /// ``AccountStore/delete(_:context:)``.
    case delete
    /// ``AccountStore/startSession(for:validity:context:)``: the event and the token's secret.
    case sessionStart
}

extension AccountStore {
    /// Whether the log holds the first event of `command`, run on `accountId` with `context`'s
    /// idempotency key, appended within `window` (a day by default: keys do not last for ever): a
    /// retry of a request that committed, whose answer was lost. False without a key. A server
    /// asks before authenticating a retried request whose first attempt ended the caller's session
    /// (a password change, a deletion), so that the retry gets the first answer.
    ///
    /// - Parameters:
    ///   - command: The kind of command the request runs.
    ///   - accountId: The account it runs on.
    ///   - context: The request's context, whose idempotency key identifies the retry.
    ///   - window: How long ago the first attempt may have committed.
    /// - Returns: True when the first attempt's first event is in the account's stream, committed
    ///   within `window`; false otherwise, and always without an idempotency key.
    /// - Throws: the log's errors.
    public func hasCommitted(
        _ command: KeyedCommand, accountId: String, context: Context, within window: Duration = .seconds(86_400)
    ) async throws -> Bool {
        guard let first = try await keyedEventIDs(command, accountId: accountId, context: context, count: 1)?.first,
            let record = try await keyedRecord(of: first, in: accountId)
        else { return false }
        return options.clock().timeIntervalSince(record.timestamp) <= Self.seconds(window)
    }

    /// The event ids of a keyed command on `accountId` (nil without a key): the same for every
    /// retry with the same key, and different for another command, account or key.
    func keyedEventIDs(_ command: KeyedCommand, accountId: String, context: Context, count: Int) async throws -> [UUID]? {
        guard let key = context.idempotencyKey else { return nil }
        let secret = try await idempotencySecret()
        return (0..<count).map { index in
            Self.derivedEventID(secret: secret, parts: ["event", command.rawValue, accountId, key, String(index)])
        }
    }

    /// The account id a keyed signup of `userId` creates (nil without a key).
    func keyedAccountId(_ command: KeyedCommand, userId: String, context: Context) async throws -> String? {
        guard let key = context.idempotencyKey else { return nil }
        let secret = try await idempotencySecret()
        let parts = ["account", command.rawValue, key, AccountLog.normalizedUserId(userId)]
        return Self.derivedEventID(secret: secret, parts: parts).uuidString.lowercased()
    }

    /// The secret of the session a keyed session start opens (nil without a key): a retry hands out
    /// the same token.
    func keyedSessionSecret(accountId: String, context: Context) async throws -> String? {
        guard let key = context.idempotencyKey else { return nil }
        let secret = try await idempotencySecret()
        let bytes = Self.mac(secret: secret, parts: ["session-secret", accountId, key])
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The position of the event `eventID` in the stream `accountId`, nil when the stream has none.
    func keyedPosition(of eventID: UUID, in accountId: String) async throws -> UInt64? {
        try await keyedRecord(of: eventID, in: accountId)?.position
    }

    /// The account whose session `token` opened, when a password change or the deletion of the
    /// account ended that session within the last day (``AccountState/endedSessions``); nil for any
    /// other token, a forged one among them. Read from the account's state alone: a server asks it
    /// before it looks for a retried request's first attempt in the stream, so that a token that
    /// never opened a session costs no read of the stream.
    ///
    /// - Parameter token: A bearer token, `<account id>.<secret>`.
    /// - Returns: The account id, or nil.
    /// - Throws: the log's errors when the account's state cannot be read.
    package func accountOfEndedSession(token: String) async throws -> String? {
        guard let (accountId, sessionHash) = BearerSecret.parseSessionToken(token), let state = try await currentState(of: accountId),
            let ended = state.endedSessions[sessionHash], AccountState.micros(options.clock()) - ended < 86_400_000_000
        else { return nil }
        return accountId
    }

    /// How far back in a stream a keyed command's first attempt is looked for: the last this many
    /// events. A retry comes soon after its first attempt; one that finds it further back than this
    /// (hundreds of sign-ins later) runs as a new request.
    static let keyedSearchDepth: UInt64 = 1_024

    /// The event `eventID` among the last ``keyedSearchDepth`` events of the stream `accountId`,
    /// nil when they hold none: the read is bounded whatever the stream's length.
    private func keyedRecord(of eventID: UUID, in accountId: String) async throws -> RecordedEvent? {
        guard let current = try await log.streamVersion(accountId) else { return nil }
        var version: UInt64 = current > Self.keyedSearchDepth ? current - Self.keyedSearchDepth + 1 : 1
        while true {
            let records = try await log.readStream(accountId, from: version, limit: 256)
            if let found = records.first(where: { $0.eventID == eventID }) { return found }
            guard let last = records.last, records.count == 256 else { return nil }
            version = last.streamVersion + 1
        }
    }

    /// The key the derivations are made under: from the vault's claim secret when the store has a
    /// vault (every server sharing the vault derives the same ids), else a random secret kept in
    /// the log's metadata (every server on the log shares it).
    private func idempotencySecret() async throws -> SymmetricKey {
        if let cached = idempotencySecretCache.withLock({ $0 }) { return cached }
        let secret: SymmetricKey
        if let vault = accounts.vault {
            secret = HKDF<SHA256>.deriveKey(inputKeyMaterial: vault.claimSecret, info: Data("idempotency-key v1".utf8), outputByteCount: 32)
        } else {
            let fresh = SymmetricKey(size: .bits256).withUnsafeBytes { [UInt8]($0) }
            secret = SymmetricKey(data: try await log.setMetadataIfAbsent("idempotency-secret", fresh))
        }
        idempotencySecretCache.withLock { $0 = secret }
        return secret
    }

    /// A key for `purpose` (a short label, such as `device-cookie v1`) that every server sharing
    /// this store's vault, or its log when it has none, derives alike: HKDF-SHA256 of the secret the
    /// idempotency keys are derived under, with the purpose as its info. Different purposes give
    /// unrelated keys.
    ///
    /// - Parameter purpose: What the key is for; one label per use.
    /// - Returns: A 256-bit key.
    /// - Throws: the log's errors when the secret must be read or stored first.
    package func derivedKey(purpose: String) async throws -> SymmetricKey {
        let base = try await idempotencySecret()
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: base, info: Data("spezi-account-store \(purpose)".utf8), outputByteCount: 32)
    }

    private static func mac(secret: SymmetricKey, parts: [String]) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: secret)
        for part in parts {
            hmac.update(data: Data(part.utf8))
            hmac.update(data: [0])
        }
        return Array(hmac.finalize())
    }

    /// A version-8 UUID from the MAC of `parts`. Its first four bytes are zero, so derived ids
    /// sort before the time-ordered ones and never move the event-id index's greatest key (the
    /// LMDB writer appends time-ordered ids at the end of that index).
    static func derivedEventID(secret: SymmetricKey, parts: [String]) -> UUID {
        var bytes = mac(secret: secret, parts: parts)
        bytes[0] = 0
        bytes[1] = 0
        bytes[2] = 0
        bytes[3] = 0
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
