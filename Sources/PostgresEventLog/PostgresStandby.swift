//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import PostgresNIO

/// How far a hot standby is behind its primary.
public struct PostgresStandbyLag: Sendable, Equatable, CustomStringConvertible {
    /// The log's last position on the primary.
    public var primaryPosition: UInt64
    /// The last position the standby has replayed.
    public var standbyPosition: UInt64
    /// How long ago the standby replayed its last transaction, in seconds (it grows while the
    /// primary is idle too); nil before it replayed any.
    public var secondsSinceLastReplay: Double?

    /// Records the standby has not replayed yet.
    public var records: UInt64 { primaryPosition > standbyPosition ? primaryPosition - standbyPosition : 0 }

    /// One line for logs and tools.
    public var description: String {
        let since = secondsSinceLastReplay.map { String(format: ", last replay %.3f s ago", $0) } ?? ""
        return "standby at position \(standbyPosition) of \(primaryPosition) (\(records) behind\(since))"
    }
}

extension PostgresEventLog {
    /// How far the hot standby the log reads from is behind the primary; nil when it reads from
    /// the primary itself.
    public func standbyLag() async throws -> PostgresStandbyLag? {
        guard standby != nil else { return nil }
        let primary = try await lastPosition()
        let location = location
        let (position, since): (UInt64, Double?) = try await query("read the replay state", fromStandby: true) { connection, logger in
            let rows = try await connection.query(
                """
                SELECT (SELECT position FROM log_head),
                       extract(epoch FROM (now() - pg_last_xact_replay_timestamp()))::float8
                """, logger: logger)
            for try await (position, since) in rows.decode((Int64, Double?).self) { return (UInt64(position), since) }
            throw PostgresLogError.server("the standby of \(location) has no head row")
        }
        return PostgresStandbyLag(primaryPosition: primary, standbyPosition: position, secondsSinceLastReplay: since)
    }
}
