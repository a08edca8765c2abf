//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
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

extension AccountStore {
    /// The account's stream, oldest first, with what each event changed. Works for deleted accounts
    /// too: their sealed events come back redacted.
    ///
    /// - Parameter accountId: The account whose stream to read.
    /// - Returns: One entry per event of the stream, in stream-version order.
    /// - Throws: ``AccountStoreError/accountNotFound(_:)`` when no stream has this account id.
    public func history(of accountId: String) async throws -> [AccountHistoryEntry] {
        let records = try await log.readStream(accountId, from: 1, limit: .max)
        guard !records.isEmpty else { throw AccountStoreError.accountNotFound(accountId) }
        var state: AccountState?
        var entries: [AccountHistoryEntry] = []
        entries.reserveCapacity(records.count)
        for record in records {
            let event = try accounts.event(from: record)
            let next = AccountState.applying(event, to: state, accountId: accountId, version: record.streamVersion, at: record.timestamp)
            var isRedacted = false
            var note: String?
            switch event {
            case .redacted: isRedacted = true
            case let .loginFailed(reason): note = reason
            default: break
            }
            entries.append(
                AccountHistoryEntry(
                    position: record.position,
                    streamVersion: record.streamVersion,
                    timestamp: record.timestamp,
                    type: record.type,
                    actor: record.metadata.actor,
                    correlationID: record.metadata.correlationID,
                    isRedacted: isRedacted,
                    note: note,
                    changes: isRedacted ? [] : Self.changes(from: state, to: next, event: event)
                ))
            state = next
        }
        return entries
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
