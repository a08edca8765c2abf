//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension AppendWriter {
    /// Validates one request against the log (inside the transaction), then writes it.
    func apply(_ request: AppendRequest, txn: Transaction, head: inout LogHead, pending: inout PendingIndex) throws -> AppendResult {
        // An event id already in the log makes this a retry: answer with the original positions.
        var found: [(index: Int, position: UInt64)] = []
        for (index, event) in request.events.enumerated() {
            if let position = try position(of: event.eventID, txn: txn, pending: pending) {
                found.append((index, position))
            }
        }
        if let firstFound = found.first {
            let positions = found.map(\.position)
            guard found.count == request.events.count, let first = positions.first, let last = positions.last,
                last >= first, positions == Array(first...last)
            else {
                throw EventLogError.duplicateEventID(request.events[firstFound.index].eventID, existingPosition: firstFound.position)
            }
            let version = try txn.withCursor(databases.records) { cursor -> UInt64 in
                guard let entry = try cursor.seek(atOrAfter: BigEndian.bytes(last)) else { return 0 }
                return BigEndian.uint64(entry.value, at: RecordFormat.Offset.streamVersion)
            }
            return AppendResult(positions: first...last, streamVersion: version, wasDuplicate: true)
        }

        let current =
            try pending.lastVersion(of: request.streamID)
            ?? tail.withState { $0.lastVersion(of: request.streamID, upTo: .max) }
            ?? LogDatabases.streamVersion(request.streamID, in: txn, streams: databases.streams)
        switch request.expected {
        case .any:
            break
        case .noStream:
            guard current == 0 else {
                throw EventLogError.wrongExpectedVersion(stream: request.streamID, expected: request.expected, actual: current)
            }
        case let .exact(expected):
            guard current == expected else {
                throw EventLogError.wrongExpectedVersion(stream: request.streamID, expected: request.expected, actual: current == 0 ? nil : current)
            }
        }

        // Claims: unique keys (such as user ids) owned by one stream at a time.
        for claim in request.claims.sorted() {
            if let owner = try txn.get(databases.claims, key: Array(claim.utf8)), owner != Array(request.streamID.utf8) {
                throw EventLogError.claimTaken(claim, owner: String(decoding: owner, as: UTF8.self))
            }
        }
        for release in request.releases where !request.claims.contains(release) {
            if try txn.get(databases.claims, key: Array(release.utf8)) == Array(request.streamID.utf8) {
                _ = try txn.delete(databases.claims, key: Array(release.utf8))
            }
        }
        for claim in request.claims {
            try txn.put(databases.claims, key: Array(claim.utf8), value: Array(request.streamID.utf8))
        }

        let now = Int64((clock().timeIntervalSince1970 * 1_000_000).rounded())
        let firstPosition = head.position + 1
        var version = current
        for (index, event) in request.events.enumerated() {
            // Never earlier than the record before it, so times never decrease along positions.
            let timestamp = max(request.timestamps?[index] ?? now, head.timestampMicros)
            let position = head.position + 1
            version += 1
            let positionKey = BigEndian.bytes(position)
            var hash = head.hash
            try positionKey.withUnsafeBytes { key in
                try txn.reserve(databases.records, key: key, count: request.sizes[index], flags: .append) { buffer in
                    hash = RecordFormat.write(
                        into: buffer, position: position, streamVersion: version, timestampMicros: timestamp,
                        streamID: request.streamID, event: event, pairs: request.metadataPairs[index], previous: head.hash)
                }
            }
            pending.add(TailItem(stream: request.streamID, version: version, position: position, eventID: event.eventID))
            head = LogHead(position: position, hash: hash, timestampMicros: timestamp)
        }
        return AppendResult(positions: firstPosition...head.position, streamVersion: version, wasDuplicate: false)
    }

    /// Where the event with this id is: this transaction's appends, the unindexed tail, then the
    /// index.
    func position(of eventID: UUID, txn: Transaction, pending: PendingIndex) throws -> UInt64? {
        if let position = pending.position(of: eventID) ?? tail.withState({ $0.position(of: eventID, upTo: .max) }) {
            return position
        }
        guard let stored = try txn.get(databases.eventIDs, key: LogDatabases.eventIDKey(eventID)), stored.count == 8 else { return nil }
        return stored.withUnsafeBytes { BigEndian.uint64($0) }
    }
}
