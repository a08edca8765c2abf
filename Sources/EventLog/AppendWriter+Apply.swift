//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension AppendWriter {
    /// Validates one request against the log (inside the transaction), then writes it; the
    /// records' index entries go into the tail at once (``IndexTail/beginWrite(_:)``).
    /// `lastEventID` is the greatest key of the `event-ids` database when the transaction began.
    func apply(_ request: AppendRequest, txn: Transaction, head: inout LogHead, lastEventID: (UInt64, UInt64)?) throws -> AppendResult {
        // The events are read through a buffer pointer, field by field: iterating the array
        // copied each whole event (retaining and releasing its strings, payload and metadata).
        try request.events.withUnsafeBufferPointer { events in
            try apply(request, events: events, txn: txn, head: &head, lastEventID: lastEventID)
        }
    }

    private func apply(
        _ request: AppendRequest, events: UnsafeBufferPointer<ProposedEvent>, txn: Transaction, head: inout LogHead,
        lastEventID: (UInt64, UInt64)?
    ) throws -> AppendResult {
        // One look at the tail answers both questions: is an event id already in the log (then
        // this is a retry), and what is the stream's last version among the unindexed records.
        let (inTail, tailVersion) = tail.withState { state in
            (
                events.indices.contains { state.position(of: events[$0].eventID, upTo: .max) != nil },
                state.lastVersion(of: request.streamID, upTo: .max)
            )
        }
        var isRetry = inTail
        if !isRetry {
            for index in events.indices where try indexedPosition(of: events[index].eventID, txn: txn, lastEventID: lastEventID) != nil {
                isRetry = true
                break
            }
        }
        if isRetry, let answer = try answerRetry(request, txn: txn, lastEventID: lastEventID) { return answer }

        let current = try tailVersion ?? LogDatabases.streamVersion(request.streamID, in: txn, streams: databases.streams)
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
        if !request.claims.isEmpty || !request.releases.isEmpty { try applyClaims(request, txn: txn) }

        let now = Int64((clock().timeIntervalSince1970 * 1_000_000).rounded())
        let firstPosition = head.position + 1
        let firstVersion = current + 1
        var version = current
        // The appender encoded the records; the writer copies each and seals it (position,
        // version, time, chain hash, CRC): the only part that must wait for the record before it.
        try request.templates.withUnsafeBytes { templates in
            var offset = 0
            for index in events.indices {
                // Never earlier than the record before it, so times never decrease along positions.
                let timestamp = max(request.timestamps?[index] ?? now, head.timestampMicros)
                let position = head.position + 1
                let size = request.sizes[index]
                version += 1
                var positionKey = position.bigEndian
                var hash = head.hash
                try withUnsafeBytes(of: &positionKey) { key in
                    try txn.reserve(databases.records, key: key, count: size, flags: .append) { buffer in
                        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: templates[offset..<(offset + size)]))
                        hash = RecordFormat.seal(buffer, position: position, streamVersion: version, timestampMicros: timestamp, previous: head.hash)
                    }
                }
                offset += size
                head = LogHead(position: position, hash: hash, timestampMicros: timestamp)
            }
        }
        tail.add(
            stream: request.streamID, firstVersion: firstVersion, firstPosition: firstPosition,
            eventIDs: events.indices.lazy.map { events[$0].eventID })
        return AppendResult(positions: firstPosition...head.position, streamVersion: version, wasDuplicate: false)
    }

    /// A request some of whose event ids are in the log already: when all of them are, at
    /// consecutive positions, the original positions (nothing is written); otherwise a
    /// `duplicateEventID` error. Nil when none is.
    private func answerRetry(_ request: AppendRequest, txn: Transaction, lastEventID: (UInt64, UInt64)?) throws -> AppendResult? {
        let inTail = tail.withState { state in request.events.map { state.position(of: $0.eventID, upTo: .max) } }
        var found: [(index: Int, position: UInt64)] = []
        for (index, event) in request.events.enumerated() {
            if let position = try inTail[index] ?? indexedPosition(of: event.eventID, txn: txn, lastEventID: lastEventID) {
                found.append((index, position))
            }
        }
        guard let firstFound = found.first else { return nil }
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

    /// Claims: unique keys (such as user ids) owned by one stream at a time.
    private func applyClaims(_ request: AppendRequest, txn: Transaction) throws {
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
    }

    /// Where the event with this id is in the `event-ids` database, or nil. An id after the
    /// database's greatest key when the transaction began (as the log's own time-ordered ids
    /// are) cannot be there: it is answered without a search.
    func indexedPosition(of eventID: UUID, txn: Transaction, lastEventID: (UInt64, UInt64)?) throws -> UInt64? {
        guard let lastEventID, !(lastEventID < TailItem.order(of: eventID)) else { return nil }
        guard let stored = try txn.get(databases.eventIDs, key: LogDatabases.eventIDKey(eventID)), stored.count == 8 else { return nil }
        return stored.withUnsafeBytes { BigEndian.uint64($0) }
    }

    /// The greatest key of the `event-ids` database in `txn`, in ``TailItem/order(of:)``, or nil
    /// when it is empty.
    func lastEventID(_ txn: Transaction) throws -> (UInt64, UInt64)? {
        try txn.withCursor(databases.eventIDs) { cursor in
            guard let entry = try cursor.last(), entry.key.count == 16 else { return nil }
            return TailItem.order(ofKey: entry.key)
        }
    }
}
