//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import SpeziAccount

/// One `AccountNotifications` event derived from the log, with the position it came from.
public struct LoggedNotification: Sendable, Equatable {
    /// The log position of the event it was derived from.
    public let position: UInt64
    /// The account it concerns.
    public let accountId: String
    /// The notification, as the seed's `AccountNotifications` reports it.
    public let event: AccountNotifications.Event
}

/// The notification stream of the whole store, derived from the log: for every account event the
/// `AccountNotifications.Event`s a signed-in session would report, in the seed's order.
///
/// | log event | notifications |
/// | --- | --- |
/// | `account.created`, `auth.login-succeeded` | `associatedAccount(details)` |
/// | `account.details-modified`, `account.userid-changed`, `account.anonymous-upgraded` | `detailsChanged(before, after)` |
/// | `account.deleted` | `deletingAccount(id)`, then `disassociatingAccount(details before)` |
/// | `auth.logged-out` | `disassociatingAccount(details)` |
///
/// Password changes, failed logins and the storage provider's `external.*` events change no
/// details and report nothing. Events of a deleted account read after its key was destroyed carry
/// no details (crypto-shredding): a consumer that needs them must keep up with the log (a feed
/// that read an account's records before its deletion keeps the details it folded, and reports
/// them in `disassociatingAccount`). It is pull-based: the log is read in short batches only as
/// fast as the consumer iterates, so a slow consumer never makes memory grow. It ends when the log closes
/// or the consuming task is cancelled, and throws when a record cannot be decoded. Each account's
/// state is carried from one of its records to the next (for the most recent 4,096 accounts), so
/// an account's notifications cost one step each, not a fold of its stream so far.
public struct AccountNotificationFeed: AsyncSequence, Sendable {
    /// The type of the elements the sequence delivers.
    public typealias Element = LoggedNotification

    let store: AccountStore
    let after: UInt64
    /// Only this account's notifications (others' records are skipped before they are decoded).
    var accountId: String?

    /// Starts reading; each iterator reads on its own.
    public func makeAsyncIterator() -> Iterator {
        Iterator(store: store, records: store.log.subscribeRecords(after: after, stream: accountId).makeAsyncIterator(), accountId: accountId)
    }

    /// The iterator that reads the sequence in batches.
    public struct Iterator: AsyncIteratorProtocol {
        let store: AccountStore
        var records: EventSubscription.Iterator
        let accountId: String?
        var pending: [LoggedNotification] = []
        var folds = NotificationFolds()

        /// The next element; `nil` when the sequence ended.
        public mutating func next() async throws -> LoggedNotification? {
            while pending.isEmpty {
                guard let record = try await records.next() else { return nil }
                if let accountId, record.streamID != accountId { continue }
                pending = try await store.notifications(for: record, folds: &folds)
            }
            return pending.removeFirst()
        }
    }
}

/// The accounts' states as of the last record a reader of the log derived notifications from
/// (``AccountStore/notifications(for:folds:)``), so that the next record of the same account takes
/// one step of the fold instead of a fold of the stream's prefix.
public struct NotificationFolds: Sendable {
    /// Each account's state through `version` (nil: it did not exist then).
    private var states: [String: (version: UInt64, state: AccountState?)] = [:]
    /// With more accounts than this, the states are dropped (each is folded again when its account
    /// comes back).
    let limit: Int

    /// Empty folds that keep at most `limit` accounts' states.
    ///
    /// - Parameter limit: The most accounts whose states are kept; values below 1 count as 1.
    public init(limit: Int = 4_096) {
        self.limit = max(1, limit)
    }

    /// The account's state before and after `record`, which holds `event`.
    mutating func step(
        _ record: RecordedEvent, _ event: AccountEvent, accounts: AccountLog
    ) async throws -> (
        before: AccountState?, after: AccountState?
    ) {
        let accountId = record.streamID
        let before: AccountState?
        if let known = states[accountId], known.version + 1 == record.streamVersion {
            before = known.state
        } else {
            before = record.streamVersion > 1 ? try await accounts.load(accountId, throughVersion: record.streamVersion - 1) : nil
        }
        let after = AccountState.applying(event, to: before, accountId: accountId, version: record.streamVersion, at: record.timestamp)
        if states[accountId] == nil && states.count >= limit { states.removeAll(keepingCapacity: true) }
        states[accountId] = (record.streamVersion, after)
        return (before, after)
    }

    /// Forgets the account: a record the fold does not know broke its chain of states.
    mutating func forget(_ accountId: String) {
        states[accountId] = nil
    }
}

extension AccountStore {
    /// The notifications derived from the log after `position` (default: from now on), live.
    ///
    /// - Parameter position: The log position after which to start, or nil for the log's last
    ///   position when this is called.
    /// - Returns: A sequence of the notifications of every account, as records arrive.
    /// - Throws: The log's `EventLogError` when its last position cannot be read (only when `position`
    ///   is nil).
    public func notifications(after position: UInt64? = nil) async throws -> AccountNotificationFeed {
        if let position { return AccountNotificationFeed(store: self, after: position) }
        return AccountNotificationFeed(store: self, after: try await log.lastPosition())
    }

    /// One account's notifications after `position` (default: from now on), live: what a client
    /// signed in to that account would be told, including changes made by other processes.
    ///
    /// - Parameters:
    ///   - accountId: The account whose notifications to deliver; other streams are skipped.
    ///   - position: The log position after which to start, or nil for the log's last position when
    ///     this is called.
    /// - Returns: A sequence of that account's notifications, as records arrive.
    /// - Throws: The log's `EventLogError` when its last position cannot be read (only when `position`
    ///   is nil).
    public func notifications(of accountId: String, after position: UInt64? = nil) async throws -> AccountNotificationFeed {
        let start: UInt64
        if let position { start = position } else { start = try await log.lastPosition() }
        return AccountNotificationFeed(store: self, after: start, accountId: accountId)
    }

    /// The notifications one record stands for (none for most security and external events), for
    /// a consumer that reads the log itself.
    ///
    /// - Parameter record: A record of the log.
    /// - Returns: The notifications it stands for, empty for a type this build does not know.
    /// - Throws: The decoding errors of ``AccountLog/event(from:)``, the log's `EventLogError` when
    ///   the account's earlier stream must be read, or an error turning a state into details.
    public func notifications(for record: RecordedEvent) async throws -> [LoggedNotification] {
        var folds = NotificationFolds()
        return try await notifications(for: record, folds: &folds)
    }

    /// ``notifications(for:)`` that carries the accounts' states in `folds` from record to record:
    /// a reader that goes through the log in order takes one fold step per record.
    ///
    /// - Parameters:
    ///   - record: A record of the log.
    ///   - folds: The states of the accounts met so far; updated with this record's account.
    /// - Returns: The notifications it stands for, empty for a type this build does not know.
    /// - Throws: The decoding errors of ``AccountLog/event(from:)``, the log's `EventLogError` when
    ///   the account's earlier stream must be read, or an error turning a state into details.
    public func notifications(for record: RecordedEvent, folds: inout NotificationFolds) async throws -> [LoggedNotification] {
        guard AccountEvent.currentSchemaVersions[record.type] != nil else {
            folds.forget(record.streamID)
            return []
        }
        let event = try accounts.event(from: record)
        let accountId = record.streamID
        let (beforeState, afterState) = try await folds.step(record, event, accounts: accounts)
        func notification(_ event: AccountNotifications.Event) -> LoggedNotification {
            LoggedNotification(position: record.position, accountId: accountId, event: event)
        }
        switch event {
        case .accountCreated, .loginSucceeded:
            guard var after = try afterState.map(details(from:)) else { return [] }
            if case .accountCreated = event { after.isNewUser = true }
            return [notification(.associatedAccount(after))]
        case .detailsModified, .userIdChanged, .anonymousAccountUpgraded:
            guard let before = try beforeState.map(details(from:)), let after = try afterState.map(details(from:)) else { return [] }
            return [notification(.detailsChanged(before, after))]
        case .accountDeleted:
            // Delivered even when the account's details were shredded: then only its id is known.
            var before = try beforeState.map(details(from:)) ?? AccountDetails()
            before.accountId = accountId
            return [notification(.deletingAccount(accountId)), notification(.disassociatingAccount(before))]
        case .loggedOut:
            guard let current = try afterState.map(details(from:)) else { return [] }
            return [notification(.disassociatingAccount(current))]
        case .passwordChanged, .passwordRehashed, .loginFailed, .passwordResetRequested, .sessionStarted, .sessionEnded,
            .externalDetailsModified, .externalDetailsErased, .identityLinked, .identityUnlinked, .sessionClient, .totpEnrolled,
            .totpConfirmed, .totpUsed, .recoveryCodeUsed, .totpRemoved, .providerTokenStored, .providerTokenRevoked, .accountDisabled,
            .accountEnabled, .redacted:
            return []
        }
    }
}
