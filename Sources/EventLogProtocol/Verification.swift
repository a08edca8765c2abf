//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// The first thing found wrong by ``EventLogReader/verify(batchSize:progress:)``.
public struct IntegrityProblem: Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: Sendable, Equatable {
        /// The record's CRC-32C does not match its bytes, or it does not parse.
        case corruptRecord
        /// The record is intact on its own, but its chain hash is not SHA-256(previous hash || body):
        /// it, or an earlier record, was altered.
        case hashMismatch
        /// Positions are not 1, 2, 3, … without gaps.
        case positionGap
        /// The stream or event-id index disagrees with the records.
        case indexMismatch
    }

    /// The position of the first bad record.
    public let position: UInt64
    /// What is wrong.
    public let kind: Kind
    /// What and where, in words.
    public let detail: String

    /// Creates a problem report.
    ///
    /// - Parameters:
    ///   - position: the position of the first bad record.
    ///   - kind: what is wrong.
    ///   - detail: what and where, in words.
    public init(position: UInt64, kind: Kind, detail: String) {
        self.position = position
        self.kind = kind
        self.detail = detail
    }

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String { "position \(position): \(detail)" }
}

/// What ``EventLogReader/verify(batchSize:progress:)`` found.
public struct VerificationReport: Sendable, Equatable {
    /// Records checked before stopping (all of them when intact).
    public let recordsChecked: UInt64
    /// The last position checked.
    public let lastPosition: UInt64
    /// The chain hash of the last intact record: note it somewhere else to detect a rewritten log later.
    public let headHash: ChainHash
    /// The first problem, or nil when the log is intact.
    public let problem: IntegrityProblem?

    /// A backend's report.
    ///
    /// - Parameters:
    ///   - recordsChecked: the records checked before stopping.
    ///   - lastPosition: the last position checked.
    ///   - headHash: the chain hash of the last intact record.
    ///   - problem: the first problem, or nil when the log is intact.
    public init(recordsChecked: UInt64, lastPosition: UInt64, headHash: ChainHash, problem: IntegrityProblem?) {
        self.recordsChecked = recordsChecked
        self.lastPosition = lastPosition
        self.headHash = headHash
        self.problem = problem
    }

    /// True when no problem was found.
    public var isIntact: Bool { problem == nil }
}

/// How far a verification has come.
public struct VerificationProgress: Sendable, Equatable {
    /// Records checked so far.
    public let checked: UInt64
    /// Records to check in all.
    public let total: UInt64

    /// Creates a progress report.
    ///
    /// - Parameters:
    ///   - checked: the records checked so far.
    ///   - total: the records to check in all.
    public init(checked: UInt64, total: UInt64) {
        self.checked = checked
        self.total = total
    }
}

/// Counts and sizes of a log.
public struct LogStatistics: Sendable, Equatable {
    /// The number of records in the log.
    public let records: Int
    /// The position of the last record (0 when the log is empty).
    public let lastPosition: UInt64
    /// The bytes the log takes on disk (for LMDB, the size of `data.mdb`).
    public let fileBytes: Int
    /// Address space reserved for it (LMDB's map size; 0 where a backend has none).
    public let mapBytes: Int

    /// A backend's figures.
    ///
    /// - Parameters:
    ///   - records: the number of records.
    ///   - lastPosition: the position of the last record (0 for an empty log).
    ///   - fileBytes: the bytes the log takes on disk.
    ///   - mapBytes: the address space reserved for it (0 where a backend has none).
    public init(records: Int, lastPosition: UInt64, fileBytes: Int, mapBytes: Int) {
        self.records = records
        self.lastPosition = lastPosition
        self.fileBytes = fileBytes
        self.mapBytes = mapBytes
    }
}
