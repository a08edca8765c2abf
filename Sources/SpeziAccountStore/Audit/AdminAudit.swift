//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// Something an administrator did that the audit trail keeps: who looked at which account, who
/// checked the log and who rebuilt a projection.
public enum AdminAction: Sendable, Equatable {
    /// An account's history was opened (its personal values were shown).
    case historyViewed(accountId: String)
    /// An account's open sessions were listed (with where each was opened from).
    case sessionsViewed(accountId: String)
    /// The log was verified, with this outcome.
    case verified(intact: Bool, recordsChecked: UInt64, headHash: String, problem: String?)
    /// A projection's rebuild was started.
    case rebuildStarted(projection: String)
    /// A projection's rebuild ended; `error` says why it failed, nil when it finished.
    case rebuildFinished(projection: String, error: String?)
    /// The administrator ended every open session of the account (`count` of them).
    case sessionsEnded(accountId: String, count: UInt64)
    /// The administrator erased the account on request: deleted, its key destroyed, for `reason`.
    case accountErased(accountId: String, reason: String)
    /// The administrator disabled the account, for `reason`.
    case accountDisabled(accountId: String, reason: String)
    /// The administrator enabled the account again, for `reason`.
    case accountEnabled(accountId: String, reason: String)

    /// The record type (`admin.history-viewed` …).
    public var typeName: String {
        switch self {
        case .historyViewed: "admin.history-viewed"
        case .sessionsViewed: "admin.sessions-viewed"
        case .verified: "admin.verified"
        case .rebuildStarted: "admin.rebuild-started"
        case .rebuildFinished: "admin.rebuild-finished"
        case .sessionsEnded: "admin.sessions-ended"
        case .accountErased: "admin.account-erased"
        case .accountDisabled: "admin.account-disabled"
        case .accountEnabled: "admin.account-enabled"
        }
    }

    /// The payload's fields (a flat JSON object of strings, numbers, booleans and nulls).
    var fields: [String: AdminField] {
        switch self {
        case let .historyViewed(accountId), let .sessionsViewed(accountId): ["accountId": .text(accountId)]
        case let .verified(intact, checked, headHash, problem):
            [
                "intact": .flag(intact), "recordsChecked": .number(checked), "headHash": .text(headHash),
                "problem": problem.map(AdminField.text) ?? .none
            ]
        case let .rebuildStarted(projection): ["projection": .text(projection)]
        case let .rebuildFinished(projection, error): ["projection": .text(projection), "error": error.map(AdminField.text) ?? .none]
        case let .sessionsEnded(accountId, count): ["accountId": .text(accountId), "count": .number(count)]
        case let .accountErased(accountId, reason), let .accountDisabled(accountId, reason), let .accountEnabled(accountId, reason):
            ["accountId": .text(accountId), "reason": .text(reason)]
        }
    }

    /// The action of a record's type and fields, or nil for a record that is not one.
    init?(type: String, fields object: [String: Any]) {
        switch type {
        case "admin.history-viewed":
            guard let accountId = object["accountId"] as? String else { return nil }
            self = .historyViewed(accountId: accountId)
        case "admin.sessions-viewed":
            guard let accountId = object["accountId"] as? String else { return nil }
            self = .sessionsViewed(accountId: accountId)
        case "admin.verified":
            guard let intact = object["intact"] as? Bool, let checked = (object["recordsChecked"] as? NSNumber)?.uint64Value,
                let headHash = object["headHash"] as? String
            else { return nil }
            self = .verified(intact: intact, recordsChecked: checked, headHash: headHash, problem: object["problem"] as? String)
        case "admin.rebuild-started":
            guard let projection = object["projection"] as? String else { return nil }
            self = .rebuildStarted(projection: projection)
        case "admin.rebuild-finished":
            guard let projection = object["projection"] as? String else { return nil }
            self = .rebuildFinished(projection: projection, error: object["error"] as? String)
        case "admin.sessions-ended":
            guard let accountId = object["accountId"] as? String, let count = (object["count"] as? NSNumber)?.uint64Value else { return nil }
            self = .sessionsEnded(accountId: accountId, count: count)
        case "admin.account-erased", "admin.account-disabled", "admin.account-enabled":
            guard let accountId = object["accountId"] as? String, let reason = object["reason"] as? String else { return nil }
            switch type {
            case "admin.account-erased": self = .accountErased(accountId: accountId, reason: reason)
            case "admin.account-disabled": self = .accountDisabled(accountId: accountId, reason: reason)
            default: self = .accountEnabled(accountId: accountId, reason: reason)
            }
        default:
            return nil
        }
    }
}

/// One field of an admin action's payload.
enum AdminField {
    case text(String)
    case number(UInt64)
    case flag(Bool)
    case none

    var json: Any {
        switch self {
        case let .text(value): value
        case let .number(value): NSNumber(value: value)
        case let .flag(value): value
        case .none: NSNull()
        }
    }
}

/// An admin action as the audit stream holds it.
public struct AdminAuditEntry: Sendable, Equatable {
    /// Its log position.
    public let position: UInt64
    /// When it was recorded.
    public let timestamp: Date
    /// The administrator's name.
    public let admin: String
    /// What was done.
    public let action: AdminAction
}

extension AccountStore {
    /// The stream that keeps the administrators' actions (no account id starts with `$`).
    public static let adminStream = "$admin"

    /// Appends `action`, done by the administrator `admin`, to the audit stream (``adminStream``),
    /// durably like every account event. Its metadata's actor is `admin:<name>`.
    ///
    /// - Parameters:
    ///   - action: What the administrator did.
    ///   - admin: The administrator's name, kept in the payload and as the actor `admin:<name>`.
    ///   - correlationID: The request the action belongs to, if any.
    /// - Returns: The log position the entry was committed at.
    /// - Throws: The log's `EventLogError` when the append fails (nothing is recorded then), or an
    ///   encoding error when the action's fields cannot be written as JSON.
    @discardableResult
    public func recordAdminAction(_ action: AdminAction, by admin: String, correlationID: String? = nil) async throws -> UInt64 {
        var object = action.fields.mapValues(\.json)
        object["admin"] = admin
        let payload = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        let event = ProposedEvent(
            type: action.typeName, metadata: EventMetadata(actor: "admin:\(admin)", correlationID: correlationID), payload: payload)
        let result = try await log.append([event], to: Self.adminStream, expectedVersion: .any, claims: [], releases: [])
        return result.positions.upperBound
    }

    /// The audit stream's most recent entries, newest first (at most `limit`); records it cannot
    /// read (written by a newer build) are left out.
    ///
    /// - Parameter limit: How many of the latest entries to read; zero or less reads none.
    /// - Returns: Up to `limit` entries, newest first; empty when nothing was recorded yet.
    /// - Throws: The log's `EventLogError` when the audit stream cannot be read.
    public func adminActions(last limit: Int = 100) async throws -> [AdminAuditEntry] {
        guard limit > 0, let version = try await log.streamVersion(Self.adminStream), version > 0 else { return [] }
        let from = version > UInt64(limit) ? version - UInt64(limit) + 1 : 1
        let records = try await log.readStream(Self.adminStream, from: from, limit: limit)
        return records.reversed().compactMap(Self.adminEntry(from:))
    }

    /// The latest `admin.verified` entry, or nil when the log was never verified from the console.
    ///
    /// - Returns: The newest entry whose action is a verification, or nil when there is none.
    /// - Throws: The log's `EventLogError` when the audit stream cannot be read.
    public func lastVerification() async throws -> AdminAuditEntry? {
        guard var version = try await log.streamVersion(Self.adminStream) else { return nil }
        while version > 0 {
            let from = version > 256 ? version - 255 : 1
            let records = try await log.readStream(Self.adminStream, from: from, limit: Int(version - from + 1))
            if let found = records.reversed().lazy.compactMap(Self.adminEntry(from:)).first(where: { entry in
                if case .verified = entry.action { return true }
                return false
            }) {
                return found
            }
            version = from - 1
        }
        return nil
    }

    private static func adminEntry(from record: RecordedEvent) -> AdminAuditEntry? {
        guard let object = (try? JSONSerialization.jsonObject(with: record.payload)) as? [String: Any],
            let admin = object["admin"] as? String, let action = AdminAction(type: record.type, fields: object)
        else { return nil }
        return AdminAuditEntry(position: record.position, timestamp: record.timestamp, admin: admin, action: action)
    }
}
