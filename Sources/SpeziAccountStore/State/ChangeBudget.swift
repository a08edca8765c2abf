//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// An account's own changes in the current hour and the bytes they wrote in the current day, as
/// its stream records them (``AccountState/changeBudget``): fixed windows of the log's clock (UTC
/// hours and days), counted from each event's commit time, so that every reader of the log folds
/// the same numbers.
///
/// A change is an `account.details-modified`, `account.password-changed`, `account.userid-changed`,
/// `account.anonymous-upgraded`, `external.details-modified` or `external.details-erased`; its bytes
/// are the UTF-8 bytes of the identifiers it sets or removes plus the encoded bytes of the values
/// it sets (and of the user id and password hash it sets). Signups, sessions, logins and resets are
/// not changes: other limits bound them.
public struct ChangeBudget: Sendable, Equatable {
    /// The hour (since 1970, UTC) the change count is for.
    public internal(set) var hour: Int64 = 0
    /// The changes made in ``hour``.
    public internal(set) var changesThisHour = 0
    /// The day (since 1970, UTC) the byte count is for.
    public internal(set) var day: Int64 = 0
    /// The bytes the changes of ``day`` wrote.
    public internal(set) var bytesToday = 0

    /// An empty budget.
    public init() {}

    init(hour: Int64, changesThisHour: Int, day: Int64, bytesToday: Int) {
        self.hour = hour
        self.changesThisHour = changesThisHour
        self.day = day
        self.bytesToday = bytesToday
    }

    static let microsPerHour: Int64 = 3_600_000_000
    static let microsPerDay: Int64 = 86_400_000_000

    /// Counts `event` if it is a change.
    mutating func count(_ event: AccountEvent, at time: Date) {
        guard let bytes = Self.changeBytes(of: event) else { return }
        count(change: bytes, at: time)
    }

    /// Counts one change of `bytes` made at `time`.
    mutating func count(change bytes: Int, at time: Date) {
        let micros = AccountState.micros(time)
        let (hour, day) = (Self.window(micros, Self.microsPerHour), Self.window(micros, Self.microsPerDay))
        if hour != self.hour {
            self.hour = hour
            changesThisHour = 0
        }
        if day != self.day {
            self.day = day
            bytesToday = 0
        }
        changesThisHour += 1
        bytesToday += bytes
    }

    /// Why `changes` more changes of `bytes` in all at `time` would pass a limit, with when they
    /// would not: nil when they stay within both.
    ///
    /// - Parameters:
    ///   - changes: The changes to make.
    ///   - bytes: The bytes they would write.
    ///   - time: When it would be made.
    ///   - changesPerHour: The most changes in one hour, or nil for no limit.
    ///   - bytesPerDay: The most bytes in one day, or nil for no limit.
    /// - Returns: The limit and the start of the window in which the change fits, or nil.
    func refusal(changes: Int, bytes: Int, at time: Date, changesPerHour: Int?, bytesPerDay: Int?) -> (limit: String, retryAt: Date)? {
        let micros = AccountState.micros(time)
        let hour = Self.window(micros, Self.microsPerHour)
        let day = Self.window(micros, Self.microsPerDay)
        if let changesPerHour, (hour == self.hour ? changesThisHour : 0) + changes > changesPerHour {
            return ("changes-per-hour", Date(timeIntervalSince1970: Double((hour + 1) * Self.microsPerHour) / 1_000_000))
        }
        if let bytesPerDay, (day == self.day ? bytesToday : 0) + bytes > bytesPerDay {
            return ("change-bytes-per-day", Date(timeIntervalSince1970: Double((day + 1) * Self.microsPerDay) / 1_000_000))
        }
        return nil
    }

    private static func window(_ micros: Int64, _ length: Int64) -> Int64 {
        micros >= 0 ? micros / length : (micros - length + 1) / length
    }

    /// The bytes a change writes, or nil for an event that is not a change.
    static func changeBytes(of event: AccountEvent) -> Int? {
        switch event {
        case let .detailsModified(modified, removed), let .externalDetailsModified(modified, removed):
            valueBytes(modified) + removed.reduce(0) { $0 + $1.utf8.count }
        case let .passwordChanged(hash):
            hash.utf8.count
        case let .userIdChanged(_, new):
            new.utf8.count
        case let .anonymousAccountUpgraded(userId, hash, values):
            userId.utf8.count + (hash?.utf8.count ?? 0) + valueBytes(values)
        case .externalDetailsErased:
            0
        case let .identityLinked(issuer, subject), let .identityUnlinked(issuer, subject):
            issuer.utf8.count + subject.utf8.count
        case .accountCreated, .accountDeleted, .loginSucceeded, .loginFailed, .loggedOut, .passwordResetRequested, .sessionStarted,
            .sessionEnded, .passwordRehashed, .sessionClient, .totpEnrolled, .totpConfirmed, .totpUsed, .recoveryCodeUsed,
            .totpRemoved, .providerTokenStored, .providerTokenRevoked, .accountDisabled, .accountEnabled, .redacted:
            nil
        }
    }

    static func valueBytes(_ values: EncodedAccountValues) -> Int {
        values.reduce(0) { $0 + $1.key.utf8.count + $1.value.count }
    }
}
