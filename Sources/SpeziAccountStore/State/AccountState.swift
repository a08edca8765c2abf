//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// An identity at an OpenID Connect provider (Sign in with Apple, Google, …): the provider's issuer
/// and the holder's id there. It signs in at most one account (``AccountLog/identityClaim(issuer:subject:)``).
public struct LinkedIdentity: Sendable, Hashable, Comparable {
    /// The provider's issuer (`iss`), such as `https://appleid.apple.com`.
    public let issuer: String
    /// The holder's stable id at the provider (`sub`).
    public let subject: String

    /// An identity.
    ///
    /// - Parameters:
    ///   - issuer: The provider's issuer.
    ///   - subject: The holder's id at the provider.
    public init(issuer: String, subject: String) {
        self.issuer = issuer
        self.subject = subject
    }

    public static func < (lhs: LinkedIdentity, rhs: LinkedIdentity) -> Bool {
        (lhs.issuer, lhs.subject) < (rhs.issuer, rhs.subject)
    }
}

/// One account as its events leave it: the fold of its stream. The service decides on it (with
/// the stream version for optimistic concurrency); the details projection stores it per account.
public struct AccountState: Sendable, Equatable {
    /// The account (and stream) id.
    public let accountId: String
    /// The user id (empty for anonymous accounts).
    public internal(set) var userId: String
    /// The scrypt hash string; nil for anonymous accounts and after deletion.
    public internal(set) var passwordHash: String?
    /// Whether the account was created by anonymous sign-in and not upgraded.
    public internal(set) var isAnonymous: Bool
    /// Values by key identifier (JSON of each key's value), including keys this build does not know.
    public internal(set) var values: EncodedAccountValues
    /// Whether the account was deleted.
    public internal(set) var isDeleted: Bool
    /// The stream version of the last event applied.
    public internal(set) var version: UInt64
    /// When the account was created.
    public internal(set) var createdAt: Date
    /// When its last event was appended.
    public internal(set) var updatedAt: Date
    /// Failed logins since the last successful one.
    public internal(set) var failedLogins: Int
    /// When the last failed login happened.
    public internal(set) var lastFailedLogin: Date?
    /// Open sessions: the SHA-256 (hex) of each bearer token's secret, with its expiry (µs since
    /// 1970). Sessions that had expired when a later one started are dropped.
    public internal(set) var sessions: [String: Int64] = [:]
    /// Open password reset requests: the SHA-256 (hex) of each token, with its expiry (µs since
    /// 1970). A password change (a completed reset among them) and the deletion use them all up;
    /// requests that had expired when a later one came are dropped.
    public internal(set) var resetTokens: [String: Int64] = [:]
    /// Sessions that a password change or the deletion ended in the last day: the SHA-256 (hex) of
    /// each token's secret, with when it ended (µs since 1970), at most
    /// ``AccountState/endedSessionsKept``. A retried request of such a session (its answer was
    /// lost, ``AccountStore/hasCommitted(_:accountId:context:within:)``) is told apart by it from a
    /// token that never opened a session, before any of the stream is read.
    public internal(set) var endedSessions: [String: Int64] = [:]
    /// The account's own changes (details, password, user id, upgrade, external values) in the
    /// current hour and the bytes of values they wrote in the current day: what
    /// ``AccountStoreLimits/changesPerAccountPerHour`` and ``AccountStoreLimits/changeBytesPerAccountPerDay``
    /// are checked against. Folded from the stream like everything else, so every process and every
    /// server on the log sees the same counts.
    public internal(set) var changeBudget = ChangeBudget()
    /// The provider identities linked to the account (`account.identity-linked`, less those
    /// unlinked since): each signs it in.
    public internal(set) var identities: Set<LinkedIdentity> = []

    /// How many ways in the account has: its password (with a user id) and each linked identity.
    /// The store refuses to unlink the last one.
    public var waysIn: Int {
        (passwordHash != nil && !userId.isEmpty ? 1 : 0) + identities.count
    }

    /// The account's TOTP second factor, enrolled (confirmed or not), or nil. Holds no secret: the
    /// secret stays in the sealed `auth.totp-enrolled` event at ``SecondFactor/enrolment``.
    public internal(set) var secondFactor: SecondFactor?

    /// A TOTP second factor as the account's events leave it.
    public struct SecondFactor: Sendable, Equatable {
        /// The stream version of the `auth.totp-enrolled` event that holds the (sealed) secret.
        public internal(set) var enrolment: UInt64
        /// Whether a first valid code confirmed it: only then does sign-in ask for a code.
        public internal(set) var isConfirmed: Bool
        /// The latest time step whose code was accepted (0: none): codes of it and of earlier steps
        /// are refused, so a code is accepted at most once.
        public internal(set) var lastStep: UInt64
        /// The hashes of the recovery codes not used yet.
        public internal(set) var recoveryCodes: Set<String>
    }

    /// How many ended sessions ``endedSessions`` keeps.
    public static let endedSessionsKept = 32

    /// The state after an `account.created` event.
    ///
    /// - Parameters:
    ///   - accountId: The account's id (its stream id).
    ///   - userId: The user id it was created with.
    ///   - passwordHash: The stored hash string of its password, or nil for an anonymous account.
    ///   - isAnonymous: Whether it was created by an anonymous sign-in.
    ///   - values: Its other values, encoded, by key identifier.
    ///   - version: The stream version of the event (1 for a new stream).
    ///   - time: When the log committed the event; both dates of the state start there.
    public init(
        accountId: String, userId: String, passwordHash: String?, isAnonymous: Bool, values: EncodedAccountValues, version: UInt64, at time: Date
    ) {
        self.accountId = accountId
        self.userId = userId
        self.passwordHash = passwordHash
        self.isAnonymous = isAnonymous
        self.values = values
        self.isDeleted = false
        self.version = version
        self.createdAt = time
        self.updatedAt = time
        self.failedLogins = 0
        self.lastFailedLogin = nil
    }

    /// Applies the next event of the stream; `nil` state plus `account.created` makes a new one.
    /// Returns nil when the event cannot start an account.
    ///
    /// - Parameters:
    ///   - event: The next event of the account's stream.
    ///   - state: The state before it, or nil before the first event.
    ///   - accountId: The account's id, used when the event starts a new state.
    ///   - version: The stream version of the event.
    ///   - time: When the log committed the event.
    /// - Returns: The state after the event: a new one for `account.created` (readable or redacted),
    ///   `state` with the event applied otherwise, or nil when there is no state to apply it to.
    public static func applying(_ event: AccountEvent, to state: AccountState?, accountId: String, version: UInt64, at time: Date) -> AccountState? {
        if case let .accountCreated(userId, passwordHash, isAnonymous, values) = event {
            return AccountState(
                accountId: accountId, userId: userId, passwordHash: passwordHash, isAnonymous: isAnonymous,
                values: values, version: version, at: time)
        }
        if case .redacted("account.created") = event {
            // A shredded account: it existed, and nothing more can be known about it.
            return AccountState(accountId: accountId, userId: "", passwordHash: nil, isAnonymous: false, values: [:], version: version, at: time)
        }
        guard var state else { return nil }
        state.apply(event, version: version, at: time)
        return state
    }

    /// Applies a later event of the same stream.
    ///
    /// - Parameters:
    ///   - event: The next event of the account's stream.
    ///   - version: The stream version of the event, which becomes the state's version.
    ///   - time: When the log committed the event; it becomes ``updatedAt`` for events that change the
    ///     account's details.
    public mutating func apply(_ event: AccountEvent, version: UInt64, at time: Date) {
        self.version = version
        changeBudget.count(event, at: time)
        switch event {
        case let .accountCreated(userId, passwordHash, isAnonymous, values):
            self = AccountState(
                accountId: accountId, userId: userId, passwordHash: passwordHash, isAnonymous: isAnonymous,
                values: values, version: version, at: time)
            return
        case let .anonymousAccountUpgraded(userId, passwordHash, values):
            self.userId = userId
            self.passwordHash = passwordHash
            self.isAnonymous = false
            self.values.merge(values) { _, new in new }
        case let .detailsModified(modified, removed):
            self.values.merge(modified) { _, new in new }
            for identifier in removed { self.values[identifier] = nil }
        case let .passwordChanged(passwordHash):
            self.passwordHash = passwordHash
            self.resetTokens = [:]
        case let .passwordRehashed(passwordHash):
            // The same password in a new hash: the owner changed nothing.
            self.passwordHash = passwordHash
            return
        case let .userIdChanged(_, new):
            self.userId = new
        case .accountDeleted:
            self.isDeleted = true
            self.isAnonymous = false
            self.userId = ""
            self.passwordHash = nil
            self.values = [:]
            self.sessions = [:]
            self.resetTokens = [:]
            self.identities = []
            self.secondFactor = nil
            // A replay after the key is destroyed reads the changes as redacted and cannot count
            // them: a deleted account's budget is empty either way.
            self.changeBudget = ChangeBudget()
        case let .sessionStarted(sessionHash, expiresAtMicros):
            let now = Int64((time.timeIntervalSince1970 * 1_000_000).rounded())
            // Copied only when a session has expired: most sign-ins find none, and the copy holds
            // every open session (up to the account's limit).
            if self.sessions.values.contains(where: { $0 <= now }) {
                self.sessions = self.sessions.filter { $0.value > now }
            }
            self.sessions[sessionHash] = expiresAtMicros
            return
        case let .sessionEnded(sessionHash, reason):
            self.sessions[sessionHash] = nil
            if reason == "password-changed" || reason == "account-deleted" {
                let now = Self.micros(time)
                self.endedSessions = self.endedSessions.filter { now - $0.value < 86_400_000_000 }
                self.endedSessions[sessionHash] = now
                if self.endedSessions.count > Self.endedSessionsKept,
                    let oldest = self.endedSessions.min(by: { ($0.value, $0.key) < ($1.value, $1.key) })
                {
                    self.endedSessions[oldest.key] = nil
                }
            }
            return
        case let .passwordResetRequested(tokenHash, expiresAtMicros):
            let now = Self.micros(time)
            self.resetTokens = self.resetTokens.filter { $0.value > now }
            self.resetTokens[tokenHash] = expiresAtMicros
            return
        case .loginSucceeded:
            self.failedLogins = 0
            self.lastFailedLogin = nil
            return
        case .loginFailed:
            self.failedLogins += 1
            self.lastFailedLogin = time
            return
        case let .identityLinked(issuer, subject):
            self.identities.insert(LinkedIdentity(issuer: issuer, subject: subject))
        case let .identityUnlinked(issuer, subject):
            self.identities.remove(LinkedIdentity(issuer: issuer, subject: subject))
        case let .totpEnrolled(_, _, _, _, hashes):
            self.secondFactor = SecondFactor(enrolment: version, isConfirmed: false, lastStep: 0, recoveryCodes: Set(hashes))
            return
        case let .totpConfirmed(step):
            self.secondFactor?.isConfirmed = true
            if let last = self.secondFactor?.lastStep { self.secondFactor?.lastStep = max(last, step) }
            return
        case let .totpUsed(step):
            if let last = self.secondFactor?.lastStep { self.secondFactor?.lastStep = max(last, step) }
            return
        case let .recoveryCodeUsed(hash):
            self.secondFactor?.recoveryCodes.remove(hash)
            return
        case .totpRemoved:
            self.secondFactor = nil
            return
        case .loggedOut, .externalDetailsModified, .externalDetailsErased, .sessionClient, .providerTokenStored, .providerTokenRevoked,
            .accountDisabled, .accountEnabled, .redacted:
            return
        }
        self.updatedAt = time
    }

    /// Applies an `account.details-modified` payload (plain, at the current key-set version)
    /// straight from its bytes: the same as ``apply(_:version:at:)`` with its decoded event, without
    /// building the event's map of values. A malformed payload throws and changes nothing.
    mutating func applyDetailsModified(payload: UnsafeRawBufferPointer, version: UInt64, at time: Date) throws {
        var check = try PayloadReader(payload)
        try check.skipValues("modified")
        try check.skipStrings("removed")
        try check.finish()
        var reader = try PayloadReader(payload)
        self.version = version
        var bytes = 0
        try reader.values("modified", into: &values, each: { identifier, value in bytes += identifier.utf8.count + value.count })
        for _ in 0..<(try reader.length("removed")) {
            let identifier = try reader.string("removed")
            bytes += identifier.utf8.count
            values[identifier] = nil
        }
        changeBudget.count(change: bytes, at: time)
        updatedAt = time
    }

    static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// The state without the personal fields (user id, password hash, values).
    func withoutPersonalData() -> AccountState {
        var copy = self
        copy.userId = ""
        copy.passwordHash = nil
        copy.values = [:]
        copy.identities = []
        return copy
    }

    /// What is left of an account whose key was destroyed: deleted, without details.
    func shreddedSkeleton() -> AccountState {
        var copy = withoutPersonalData()
        copy.isDeleted = true
        copy.isAnonymous = false
        // A replay reads the enrolment redacted, and the events after it find no second factor.
        copy.secondFactor = nil
        return copy
    }

    // MARK: Stored form (the details projection's values)

    /// The compact binary form kept by the details projection.
    ///
    /// - Returns: The bytes that ``init(encoded:)`` reads back: the fields in a fixed order, then the
    ///   values and, when there are any, the sessions.
    public func encoded() -> [UInt8] {
        var writer = PayloadWriter()
        writer.string(accountId)
        writer.string(userId)
        writer.optionalString(passwordHash)
        writer.bool(isAnonymous)
        writer.bool(isDeleted)
        writer.varint(version)
        writer.varint(UInt64(bitPattern: Int64((createdAt.timeIntervalSince1970 * 1_000_000).rounded())))
        writer.varint(UInt64(bitPattern: Int64((updatedAt.timeIntervalSince1970 * 1_000_000).rounded())))
        writer.varint(UInt64(failedLogins))
        writer.varint(lastFailedLogin.map { UInt64(bitPattern: Int64(($0.timeIntervalSince1970 * 1_000_000).rounded())) + 1 } ?? 0)
        writer.values(values)
        // Written only when there are sessions or more, so a state without any keeps its earlier form.
        let hasMore =
            !resetTokens.isEmpty || !endedSessions.isEmpty || changeBudget != ChangeBudget() || !identities.isEmpty || secondFactor != nil
        if !sessions.isEmpty || hasMore {
            Self.write(sessions, into: &writer)
        }
        // Then, when any is set: the reset tokens, the ended sessions and the change budget.
        if hasMore {
            Self.write(resetTokens, into: &writer)
            Self.write(endedSessions, into: &writer)
            writer.varint(UInt64(bitPattern: changeBudget.hour))
            writer.varint(UInt64(changeBudget.changesThisHour))
            writer.varint(UInt64(bitPattern: changeBudget.day))
            writer.varint(UInt64(changeBudget.bytesToday))
        }
        // Then, when any is linked or there is a second factor: the identities, sorted (a count,
        // possibly 0).
        if !identities.isEmpty || secondFactor != nil {
            writer.varint(UInt64(identities.count))
            for identity in identities.sorted() {
                writer.string(identity.issuer)
                writer.string(identity.subject)
            }
        }
        // Then, only when there is one: the second factor.
        if let secondFactor {
            writer.varint(secondFactor.enrolment)
            writer.bool(secondFactor.isConfirmed)
            writer.varint(secondFactor.lastStep)
            writer.strings(secondFactor.recoveryCodes.sorted())
        }
        return writer.bytes
    }

    private static func write(_ map: [String: Int64], into writer: inout PayloadWriter) {
        writer.varint(UInt64(map.count))
        for (hash, value) in map.sorted(by: { $0.key < $1.key }) {
            writer.string(hash)
            writer.varint(UInt64(bitPattern: value))
        }
    }

    private static func read(_ field: String, from reader: inout PayloadReader) throws -> [String: Int64] {
        let count = try reader.varint(field)
        guard count <= PayloadReader.maximumFieldLength else { throw PayloadDecodingError.truncated(field: field, offset: reader.offset) }
        var map: [String: Int64] = [:]
        for _ in 0..<count {
            let hash = try reader.string(field)
            map[hash] = Int64(bitPattern: try reader.varint(field))
        }
        return map
    }

    /// Reads the stored form.
    ///
    /// - Parameter bytes: The stored form, as ``encoded()`` wrote it.
    /// - Throws: ``PayloadDecodingError`` when the bytes are cut short, have bytes left over or hold a
    ///   field that does not parse.
    public init(encoded bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { raw in
            var reader = try PayloadReader(raw)
            func date(_ field: String) throws -> Date {
                Date(timeIntervalSince1970: Double(Int64(bitPattern: try reader.varint(field))) / 1_000_000)
            }
            var state = AccountState(
                accountId: try reader.string("accountId"), userId: try reader.string("userId"),
                passwordHash: try reader.optionalString("passwordHash"), isAnonymous: try reader.bool("isAnonymous"),
                values: [:], version: 0, at: Date(timeIntervalSince1970: 0))
            state.isDeleted = try reader.bool("isDeleted")
            state.version = try reader.varint("version")
            state.createdAt = try date("createdAt")
            state.updatedAt = try date("updatedAt")
            state.failedLogins = Int(clamping: try reader.varint("failedLogins"))
            let lastFailed = try reader.varint("lastFailedLogin")
            state.lastFailedLogin = lastFailed == 0 ? nil : Date(timeIntervalSince1970: Double(Int64(bitPattern: lastFailed - 1)) / 1_000_000)
            state.values = try reader.values("values")
            if !reader.isAtEnd { state.sessions = try Self.read("sessions", from: &reader) }
            if !reader.isAtEnd {
                state.resetTokens = try Self.read("reset tokens", from: &reader)
                state.endedSessions = try Self.read("ended sessions", from: &reader)
                state.changeBudget = ChangeBudget(
                    hour: Int64(bitPattern: try reader.varint("change hour")), changesThisHour: Int(clamping: try reader.varint("changes")),
                    day: Int64(bitPattern: try reader.varint("change day")), bytesToday: Int(clamping: try reader.varint("change bytes")))
            }
            if !reader.isAtEnd {
                let count = try reader.varint("identities")
                guard count <= PayloadReader.maximumFieldLength else {
                    throw PayloadDecodingError.truncated(field: "identities", offset: reader.offset)
                }
                for _ in 0..<count {
                    state.identities.insert(LinkedIdentity(issuer: try reader.string("issuer"), subject: try reader.string("subject")))
                }
            }
            if !reader.isAtEnd {
                state.secondFactor = SecondFactor(
                    enrolment: try reader.varint("totp enrolment"), isConfirmed: try reader.bool("totp confirmed"),
                    lastStep: try reader.varint("totp last step"), recoveryCodes: Set(try reader.strings("recovery codes")))
            }
            try reader.finish()
            return state
        }
    }
}
