//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// One event of an account's stream, as an audit trail shows it: when, where in the log, what, by
/// whom, and which keys it changed from what to what.
public struct AccountHistoryEntry: Sendable, Equatable {
    /// One key the event changed.
    public struct Change: Sendable, Equatable {
        /// The key identifier (`userId`, `password`, `name` …, or `deleted`).
        public let key: String
        /// The value before, as JSON text (password hashes as `***`); nil when the key had no value.
        public let old: String?
        /// The value after, as JSON text (password hashes as `***`); nil when the key was removed.
        public let new: String?

        /// Creates a change of one key.
        ///
        /// - Parameters:
        ///   - key: The identifier of the key that changed.
        ///   - old: Its value before the event, as JSON text; nil when it had none.
        ///   - new: Its value after the event, as JSON text; nil when the event removed it.
        public init(key: String, old: String?, new: String?) {
            self.key = key
            self.old = old
            self.new = new
        }
    }

    /// The event's position in the whole log.
    public let position: UInt64
    /// The event's version in the account's stream.
    public let streamVersion: UInt64
    /// When the log committed it.
    public let timestamp: Date
    /// The event type name (`account.created` …).
    public let type: String
    /// Who caused it, as recorded in its metadata.
    public let actor: String?
    /// The request it belonged to, as recorded in its metadata.
    public let correlationID: String?
    /// True when its personal data can no longer be read (the account was deleted: crypto-shredding).
    public let isRedacted: Bool
    /// A short note for events that carry something other than key changes (a failed login's reason).
    public let note: String?
    /// The keys it changed, sorted by key identifier (`userId` and `password` first).
    public let changes: [Change]
}

/// One page of an account's history: up to the page size of entries, oldest first, and where the
/// next page starts.
public struct AccountHistoryPage: Sendable, Equatable {
    /// The entries, in stream-version order.
    public let entries: [AccountHistoryEntry]
    /// The stream version to pass as `after` for the next page; nil when this page reaches the
    /// stream's end.
    public let next: UInt64?
}

extension AccountStore {
    /// The largest page ``history(of:after:limit:)`` returns.
    public static let maxHistoryPage = 500

    /// The account's stream, oldest first, with what each event changed. Works for deleted accounts
    /// too: their sealed events come back redacted. The whole history is built in memory: a
    /// server answers pages (``history(of:after:limit:)``), a tool walks it
    /// (``forEachHistoryEntry(of:after:limit:_:)``).
    ///
    /// - Parameter accountId: The account whose stream to read.
    /// - Returns: One entry per event of the stream, in stream-version order.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` when no stream has this account id.
    public func history(of accountId: String) async throws -> [AccountHistoryEntry] {
        var entries: [AccountHistoryEntry] = []
        try await forEachHistoryEntry(of: accountId) { entries.append($0) }
        return entries
    }

    /// The events of the account's stream after stream version `after`, at most `limit` of them
    /// (at most ``maxHistoryPage``), with what each changed. The state before the page is folded
    /// from the stream in batches, so memory holds one batch and one page, whatever the stream's
    /// length.
    ///
    /// - Parameters:
    ///   - accountId: The account whose stream to read.
    ///   - after: The stream version the page starts after (0 for the first page).
    ///   - limit: The most entries (1 to ``maxHistoryPage``).
    /// - Returns: The page, and where the next one starts.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` when no stream has this account id.
    public func history(of accountId: String, after: UInt64, limit: Int) async throws -> AccountHistoryPage {
        var entries: [AccountHistoryEntry] = []
        let next = try await forEachHistoryEntry(of: accountId, after: after, limit: min(max(1, limit), Self.maxHistoryPage)) {
            entries.append($0)
        }
        return AccountHistoryPage(entries: entries, next: next)
    }

    /// Walks the account's stream once, oldest first, handing `body` each event after stream
    /// version `after` with what it changed, at most `limit` of them. The stream is read and folded
    /// in batches of 512: memory holds one batch, whatever the stream's length.
    ///
    /// - Parameters:
    ///   - accountId: The account whose stream to read.
    ///   - after: The stream version the walk starts after (0: from the first event).
    ///   - limit: The most entries handed to `body`.
    ///   - body: Gets each entry in stream-version order.
    /// - Returns: The stream version to pass as `after` to go on, or nil when the walk reached the
    ///   stream's end.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` when no stream has this account id, or
    ///   what `body` throws.
    @discardableResult
    public func forEachHistoryEntry(
        of accountId: String, after: UInt64 = 0, limit: Int = .max, _ body: (AccountHistoryEntry) throws -> Void
    ) async throws -> UInt64? {
        guard AccountLog.couldBeStream(accountId), let current = try await log.streamVersion(accountId) else {
            throw AccountStoreError.accountNotFound(accountId)
        }
        var state: AccountState?
        var next: UInt64 = 1
        var handed = 0
        while next <= current {
            let batch = try await log.readStream(accountId, from: next, limit: 512)
            guard let last = batch.last else { break }
            for record in batch {
                let event = try accounts.event(from: record)
                let following = AccountState.applying(event, to: state, accountId: accountId, version: record.streamVersion, at: record.timestamp)
                if record.streamVersion > after {
                    if handed == limit { return record.streamVersion - 1 }
                    try body(Self.entry(record, event: event, from: state, to: following))
                    handed += 1
                }
                state = following
            }
            next = last.streamVersion + 1
        }
        return nil
    }

    private static func entry(
        _ record: RecordedEvent, event: AccountEvent, from state: AccountState?, to following: AccountState?
    )
        -> AccountHistoryEntry
    {
        var isRedacted = false
        var note: String?
        switch event {
        case .redacted: isRedacted = true
        case let .loginFailed(reason): note = reason
        default: break
        }
        return AccountHistoryEntry(
            position: record.position,
            streamVersion: record.streamVersion,
            timestamp: record.timestamp,
            type: record.type,
            actor: record.metadata.actor,
            correlationID: record.metadata.correlationID,
            isRedacted: isRedacted,
            note: note,
            changes: isRedacted ? [] : changes(from: state, to: following, event: event)
        )
    }

    /// The differences between two folded states (plus the keys an external-details event sets or
    /// removes, which live outside the account's own state).
    static func changes(from old: AccountState?, to new: AccountState?, event: AccountEvent) -> [AccountHistoryEntry.Change] {
        var changes: [AccountHistoryEntry.Change] = []
        let oldUserId = old?.userId.nilIfEmpty
        let newUserId = new?.userId.nilIfEmpty
        if oldUserId != newUserId {
            changes.append(.init(key: "userId", old: oldUserId.map(Self.jsonString), new: newUserId.map(Self.jsonString)))
        }
        if old?.passwordHash != new?.passwordHash {
            changes.append(.init(key: "password", old: old?.passwordHash.map { _ in "***" }, new: new?.passwordHash.map { _ in "***" }))
        }
        let oldValues = old?.values ?? [:]
        let newValues = new?.values ?? [:]
        for key in Set(oldValues.keys).union(newValues.keys).sorted() where oldValues[key] != newValues[key] {
            changes.append(.init(key: key, old: oldValues[key].map(Self.text), new: newValues[key].map(Self.text)))
        }
        if (old?.isDeleted ?? false) != (new?.isDeleted ?? false) {
            changes.append(.init(key: "deleted", old: "false", new: "true"))
        }
        switch event {
        case let .externalDetailsModified(modified, removed):
            for key in modified.keys.sorted() {
                changes.append(.init(key: "external." + key, old: nil, new: modified[key].map(Self.text)))
            }
            for key in removed.sorted() {
                changes.append(.init(key: "external." + key, old: nil, new: nil))
            }
        default:
            break
        }
        return changes
    }

    /// JSON bytes as text.
    static func text(_ data: Data) -> String {
        String(decoding: data, as: UTF8.self)
    }

    /// A string as JSON text.
    static func jsonString(_ string: String) -> String {
        (try? JSONEncoder().encode(string)).map(text) ?? "\"\(string)\""
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
