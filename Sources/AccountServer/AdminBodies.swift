//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Projections
import SpeziAccountStore

/// An account found by id or user id (no personal values: lists show ids only).
struct FoundBody: Encodable {
    let accountId: String
    /// From the log: whether the account is deleted.
    let deleted: Bool
    /// Whether this node's details cache has applied the account's latest record.
    let applied: Bool
}

/// An account's state without its personal values (no user id, no details): enough to see why
/// someone cannot sign in.
struct AccountSummaryBody: Encodable {
    let accountId: String
    /// The stream version of its last event.
    let version: UInt64
    let deleted: Bool
    let anonymous: Bool
    let createdAt: String
    let updatedAt: String
    /// Failed logins since the last successful one, and when the last one failed.
    let failedLogins: Int
    let lastFailedLogin: String?
    /// Sessions and password reset requests that have not expired or ended.
    let openSessions: Int
    let openPasswordResets: Int
    /// Whether this node's details cache has applied the account's latest record.
    let applied: Bool
    /// Whether an administrator disabled the account (it cannot sign in).
    var disabled = false

    init(_ state: AccountState, now: Date, applied: Bool) {
        let micros = Int64((now.timeIntervalSince1970 * 1_000_000).rounded())
        accountId = state.accountId
        version = state.version
        deleted = state.isDeleted
        anonymous = state.isAnonymous
        createdAt = JSONCoding.timestamp(state.createdAt)
        updatedAt = JSONCoding.timestamp(state.updatedAt)
        failedLogins = state.failedLogins
        lastFailedLogin = state.lastFailedLogin.map(JSONCoding.timestamp)
        openSessions = state.sessions.values.filter { $0 > micros }.count
        openPasswordResets = state.resetTokens.values.filter { $0 > micros }.count
        self.applied = applied
    }
}

/// Activity counts, one point per bucket, oldest first.
struct ActivityBody: Encodable {
    struct Point: Encodable, Equatable {
        let start: String
        var signups = 0
        var deletions = 0
        var failedLogins = 0
    }

    let bucket: String
    let series: [Point]
}

/// Counts signups, deletions and failed logins per bucket, reading the log backwards from its end
/// until the window's start (so the cost follows the window, not the log's length).
struct ActivityScan {
    let log: any EventLogBackend
    let bucketSeconds: Double
    let count: Int

    func run(now: Date) async throws -> [ActivityBody.Point] {
        // The last bucket is the one that holds `now`.
        let end = ((now.timeIntervalSince1970 / bucketSeconds).rounded(.down) + 1) * bucketSeconds
        let start = end - Double(count) * bucketSeconds
        var points = (0..<count).map { index in
            ActivityBody.Point(start: JSONCoding.timestamp(Date(timeIntervalSince1970: start + Double(index) * bucketSeconds)))
        }
        var position = try await log.lastPosition()
        scan: while position > 0 {
            let batch = try await log.read(from: position, direction: .backward, limit: 1_000)
            guard let oldest = batch.last else { break }
            for record in batch {
                let time = record.timestamp.timeIntervalSince1970
                if time < start { break scan }
                let index = Int((time - start) / bucketSeconds)
                guard points.indices.contains(index) else { continue }
                switch record.type {
                case "account.created": points[index].signups += 1
                case "account.deleted": points[index].deletions += 1
                case "auth.login-failed": points[index].failedLogins += 1
                default: break
                }
            }
            position = oldest.position - 1
        }
        return points
    }
}

/// The outcome of the last verify run from the console.
struct VerificationBody: Encodable {
    /// The one-line outcome a verify job and its audit entry show.
    static func summary(intact: Bool, recordsChecked: UInt64, problem: String?) -> String {
        intact ? "intact: \(recordsChecked) records" : "damaged: \(problem ?? "")"
    }

    let time: String
    let admin: String
    let intact: Bool
    let recordsChecked: UInt64
    let headHash: String
    let problem: String?

    init?(_ entry: AdminAuditEntry) {
        guard case let .verified(intact, checked, headHash, problem) = entry.action else { return nil }
        time = JSONCoding.timestamp(entry.timestamp)
        admin = entry.admin
        self.intact = intact
        recordsChecked = checked
        self.headHash = headHash
        self.problem = problem
    }
}

/// One projection's state.
struct ProjectionBody: Encodable {
    let name: String
    let generation: UInt32
    let checkpoint: UInt64
    let lag: UInt64
    let rebuildingGeneration: UInt32?
    let failure: String?

    init(_ status: ProjectionStatus) {
        name = status.name
        generation = status.generation
        checkpoint = status.checkpoint
        lag = status.lag
        rebuildingGeneration = status.rebuilding?.generation
        failure = status.failure ?? status.storageError
    }
}

/// The log and its projections.
struct LogStateBody: Encodable {
    let records: UInt64
    let headHash: String?
    let lastVerification: VerificationBody?
    let projections: [ProjectionBody]
}

/// A page of the log for a follower (`GET /admin/api/log/records`).
struct LogRecordsBody: Encodable {
    let records: [AdminTail.Entry]
    /// The position to ask after next time: the last record's, or `after` when there was none.
    let next: UInt64
    /// The log's last position when the page was read.
    let head: UInt64
}

/// One entry of the audit stream.
struct AuditEntryBody: Encodable {
    let position: UInt64
    let time: String
    let admin: String
    let action: String
    let accountId: String?
    let projection: String?
    let outcome: String?

    init(_ entry: AdminAuditEntry) {
        position = entry.position
        time = JSONCoding.timestamp(entry.timestamp)
        admin = entry.admin
        action = entry.action.typeName
        switch entry.action {
        case let .historyViewed(id), let .sessionsViewed(id):
            (accountId, projection, outcome) = (id, nil, nil)
        case let .verified(intact, checked, _, problem):
            (accountId, projection, outcome) = (nil, nil, VerificationBody.summary(intact: intact, recordsChecked: checked, problem: problem))
        case let .rebuildStarted(name):
            (accountId, projection, outcome) = (nil, name, nil)
        case let .rebuildFinished(name, error):
            (accountId, projection, outcome) = (nil, name, error.map { "failed: \($0)" } ?? "finished")
        case let .sessionsEnded(id, count):
            (accountId, projection, outcome) = (id, nil, "\(count) ended")
        case let .accountErased(id, reason):
            (accountId, projection, outcome) = (id, nil, "erased: \(reason)")
        case let .accountDisabled(id, reason):
            (accountId, projection, outcome) = (id, nil, "disabled: \(reason)")
        case let .accountEnabled(id, reason):
            (accountId, projection, outcome) = (id, nil, "enabled: \(reason)")
        }
    }
}
