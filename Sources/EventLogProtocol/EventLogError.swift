//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Everything that can go wrong with the log, each with what and where.
/// Every backend of ``EventLogBackend`` reports its failures with these cases; a storage engine's
/// own error, where there is one, travels attached as `any Error`.
public enum EventLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The optimistic-concurrency check failed; nothing was written. `actual` is nil for a missing stream.
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: UInt64?)
    /// Some, but not all, events of an append are already in the log (a retry must resend the same batch).
    case duplicateEventID(UUID, existingPosition: UInt64)
    /// A claimed unique key belongs to another stream; nothing was written.
    case claimTaken(String, owner: String)
    /// The stream id is empty, too long or contains a NUL byte.
    case invalidStreamID(String, reason: String)
    /// An event or batch breaks a limit (size, type name, metadata) or repeats an event id.
    case invalidEvent(reason: String)
    /// A stored record failed its checksum or does not parse.
    case corruptRecord(position: UInt64, reason: String, path: String)
    /// The log was written by a format this code does not read.
    case unsupportedFormatVersion(found: UInt32, supported: UInt32, path: String)
    /// The path holds something other than an event log (or a damaged one).
    case notAnEventLog(path: String, reason: String)
    /// The log was closed.
    case closed(path: String)
    /// The disk is full: the append was not committed, and the log is intact.
    case diskFull(path: String, underlying: any Error)
    /// Another storage failure (I/O error, permissions, a lost connection, …): the append was not committed.
    case storage(any Error)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .wrongExpectedVersion(stream, expected, actual):
            let found = actual.map { "is at version \($0)" } ?? "does not exist"
            return "stream \"\(stream)\" \(found), but the append expected \(expected); nothing was written"
        case let .duplicateEventID(id, position):
            return "event \(id.uuidString) is already in the log at position \(position), but the rest of its batch is not; resend the original batch"
        case let .claimTaken(claim, owner):
            return "\"\(claim)\" is already claimed by stream \"\(owner)\"; nothing was written"
        case let .invalidStreamID(id, reason):
            return "invalid stream id \"\(id.prefix(80))\": \(reason)"
        case let .invalidEvent(reason):
            return "invalid event: \(reason)"
        case let .corruptRecord(position, reason, path):
            return "corrupt record at position \(position) in \(path): \(reason)"
        case let .unsupportedFormatVersion(found, supported, path):
            return "the log at \(path) has format version \(found); this build reads version \(supported) only"
        case let .notAnEventLog(path, reason):
            return "\(path) is not a usable event log: \(reason)"
        case let .closed(path):
            return "the log at \(path) is closed"
        case let .diskFull(path, underlying):
            return "the disk holding \(path) is full (\(Self.reason(of: underlying))); the append was not committed and the log is intact"
        case let .storage(error):
            return "storage failure: \(String(describing: error))"
        }
    }

    /// The attached error's own reason, where it offers one apart from its context.
    private static func reason(of error: any Error) -> String {
        (error as? any StorageFailureReason)?.reason ?? String(describing: error)
    }

    /// Equal cases with equal values; attached errors compare by their descriptions.
    public static func == (lhs: EventLogError, rhs: EventLogError) -> Bool {
        switch (lhs, rhs) {
        case let (.wrongExpectedVersion(a, b, c), .wrongExpectedVersion(d, e, f)): a == d && b == e && c == f
        case let (.duplicateEventID(a, b), .duplicateEventID(c, d)): a == c && b == d
        case let (.claimTaken(a, b), .claimTaken(c, d)): a == c && b == d
        case let (.invalidStreamID(a, b), .invalidStreamID(c, d)): a == c && b == d
        case let (.invalidEvent(a), .invalidEvent(b)): a == b
        case let (.corruptRecord(a, b, c), .corruptRecord(d, e, f)): a == d && b == e && c == f
        case let (.unsupportedFormatVersion(a, b, c), .unsupportedFormatVersion(d, e, f)): a == d && b == e && c == f
        case let (.notAnEventLog(a, b), .notAnEventLog(c, d)): a == c && b == d
        case let (.closed(a), .closed(b)): a == b
        case let (.diskFull(a, b), .diskFull(c, d)): a == c && String(describing: b) == String(describing: d)
        case let (.storage(a), .storage(b)): String(describing: a) == String(describing: b)
        default: false
        }
    }
}

/// An error that can say what went wrong without the operation and path around it (the disk-full
/// message uses it).
public protocol StorageFailureReason: Error {
    /// The cause alone, e.g. "No space left on device".
    var reason: String { get }
}
