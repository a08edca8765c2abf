//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

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
        case let .userIdChanged(_, new):
            self.userId = new
        case .accountDeleted:
            self.isDeleted = true
            self.isAnonymous = false
            self.userId = ""
            self.passwordHash = nil
            self.values = [:]
            self.sessions = [:]
        case let .sessionStarted(sessionHash, expiresAtMicros):
            let now = Int64((time.timeIntervalSince1970 * 1_000_000).rounded())
            self.sessions = self.sessions.filter { $0.value > now }
            self.sessions[sessionHash] = expiresAtMicros
            return
        case let .sessionEnded(sessionHash, _):
            self.sessions[sessionHash] = nil
            return
        case .loginSucceeded:
            self.failedLogins = 0
            self.lastFailedLogin = nil
            return
        case .loginFailed:
            self.failedLogins += 1
            self.lastFailedLogin = time
            return
        case .loggedOut, .passwordResetRequested, .externalDetailsModified, .externalDetailsErased, .redacted:
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
        try reader.values("modified", into: &values)
        for _ in 0..<(try reader.length("removed")) { values[try reader.string("removed")] = nil }
        updatedAt = time
    }

    /// The state without the personal fields (user id, password hash, values).
    func withoutPersonalData() -> AccountState {
        var copy = self
        copy.userId = ""
        copy.passwordHash = nil
        copy.values = [:]
        return copy
    }

    /// What is left of an account whose key was destroyed: deleted, without details.
    func shreddedSkeleton() -> AccountState {
        var copy = withoutPersonalData()
        copy.isDeleted = true
        copy.isAnonymous = false
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
        // Written only when there are sessions, so a state without any keeps its earlier form.
        if !sessions.isEmpty {
            writer.varint(UInt64(sessions.count))
            for (hash, expiry) in sessions.sorted(by: { $0.key < $1.key }) {
                writer.string(hash)
                writer.varint(UInt64(bitPattern: expiry))
            }
        }
        return writer.bytes
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
            if !reader.isAtEnd {
                let count = try reader.varint("sessions")
                guard count <= PayloadReader.maximumFieldLength else {
                    throw PayloadDecodingError.truncated(field: "sessions", offset: reader.offset)
                }
                for _ in 0..<count {
                    let hash = try reader.string("session hash")
                    state.sessions[hash] = Int64(bitPattern: try reader.varint("session expiry"))
                }
            }
            try reader.finish()
            return state
        }
    }
}
