//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat
import Synchronization

/// An order-independent digest of a set of index entries: how many, and the sum (modulo 2⁶⁴) of a
/// keyed 64-bit hash of each entry's fields.
///
/// Verification sums the entries that the records imply, in position order, and the entries the
/// `streams` and `event-ids` databases hold, in key order; equal digests mean equal sets, so the
/// indexes are checked by three sequential passes instead of two B-tree lookups per record. The
/// hash is Swift's `Hasher` (SipHash-1-3 under a seed drawn for each process), so an accidental
/// difference goes unnoticed with a chance of about 2⁻⁶⁴, and a deliberate one cannot be made to
/// match without the seed. Sums, unlike exclusive-ors, do not cancel an entry that appears twice.
struct IndexDigest: Equatable, Sendable {
    private(set) var count: UInt64 = 0
    private(set) var sum: UInt64 = 0

    /// The `streams` entry "stream id, 0x00, version → position".
    mutating func addStream(_ streamID: UnsafeRawBufferPointer, version: UInt64, position: UInt64) {
        var hasher = Hasher()
        hasher.combine(0 as UInt8)
        hasher.combine(bytes: streamID)
        hasher.combine(version)
        hasher.combine(position)
        add(hasher.finalize())
    }

    /// The `event-ids` entry "16-byte event id → position".
    mutating func addEventID(_ eventID: UnsafeRawBufferPointer, position: UInt64) {
        var hasher = Hasher()
        hasher.combine(1 as UInt8)
        hasher.combine(bytes: eventID)
        hasher.combine(position)
        add(hasher.finalize())
    }

    private mutating func add(_ hash: Int) {
        count += 1
        sum &+= UInt64(bitPattern: Int64(hash))
    }
}

/// The digests of both indexes.
struct IndexDigests: Equatable, Sendable {
    var streams = IndexDigest()
    var eventIDs = IndexDigest()

    /// Adds the two entries that `record` implies.
    mutating func add(_ record: RecordView) {
        streams.addStream(record.streamIDBytes, version: record.streamVersion, position: record.position)
        eventIDs.addEventID(
            UnsafeRawBufferPointer(rebasing: record.bytes[RecordFormat.Offset.eventID..<RecordFormat.Offset.eventID + 16]),
            position: record.position)
    }
}

extension EventLog {
    /// The digest of the entries of `database` (`streams` or `event-ids`) that point at positions
    /// up to `bound`, read in key order, `batchSize` entries per short read transaction. Entries
    /// written while it reads point after `bound` (the indexes only grow, and every entry up to
    /// `bound` was in when `bound` was read), so the batches see one consistent set. An entry
    /// whose key or value does not parse is a problem of its own. Ends early, with what it has,
    /// when `stop` holds true.
    func indexDigest(
        _ database: Database, isStreams: Bool, bound: UInt64, batchSize: Int, stop: borrowing Atomic<Bool>
    ) throws -> Checked<IndexDigest> {
        var digest = IndexDigest()
        var resumeAfter: [UInt8]?
        while !stop.load(ordering: .relaxed) {
            let outcome: (read: Int, bad: IntegrityProblem?) = try reading { txn in
                try txn.withCursor(database) { cursor in
                    var read = 0
                    var entry = try Self.resume(&cursor, after: resumeAfter)
                    var last: Cursor.Entry?
                    while let current = entry, read < max(batchSize, 1) {
                        switch IndexEntry.parse(current, isStreams: isStreams) {
                        case .failed(let problem):
                            return (read, problem)
                        case .passed(let parsed) where parsed.position <= bound:
                            parsed.add(to: &digest)
                        case .passed:
                            break
                        }
                        read += 1
                        last = current
                        entry = try cursor.next()
                    }
                    if let last { resumeAfter = Array(last.key) }
                    return (read, nil)
                }
            }
            if let bad = outcome.bad { return .failed(bad) }
            if outcome.read == 0 { break }
        }
        return .passed(digest)
    }

    /// The first entry after the key `after` (the first entry when nil).
    private static func resume(_ cursor: inout Cursor, after key: [UInt8]?) throws -> Cursor.Entry? {
        guard let key else { return try cursor.first() }
        let entry = try cursor.seek(atOrAfter: key)
        if let found = entry, found.key.elementsEqual(key) { return try cursor.next() }
        return entry
    }

    /// Names the first thing that made the digests differ: the first record up to `bound` whose
    /// index entry is missing or points elsewhere, or else an index entry up to `bound` that no
    /// record has. Looks every entry up, so it runs only after the digests disagreed.
    func locateIndexProblem(bound: UInt64, batchSize: Int) throws -> IntegrityProblem {
        var next: UInt64 = 1
        while next <= bound {
            let found: IntegrityProblem? = try reading { txn in
                try txn.withCursor(databases.records) { cursor in
                    var entry = try cursor.seek(atOrAfter: BigEndian.bytes(next))
                    var count = 0
                    while let current = entry, count < max(batchSize, 1), next <= bound {
                        let record = try RecordView(current.value, position: BigEndian.uint64(current.key), path: path)
                        if let problem = checkIndexEntries(of: record, txn: txn) { return problem }
                        next = record.position + 1
                        count += 1
                        entry = try cursor.next()
                    }
                    if entry == nil { next = bound + 1 }
                    return nil
                }
            }
            if let found { return found }
        }
        for isStreams in [true, false] {
            if let extra = try entryWithoutRecord(isStreams: isStreams, bound: bound) { return extra }
        }
        return IntegrityProblem(
            position: bound, kind: .indexMismatch, detail: "the indexes and the records up to \(bound) differ, but no single entry could be named")
    }

    /// The first entry up to `bound` whose record is not the one it names.
    private func entryWithoutRecord(isStreams: Bool, bound: UInt64) throws -> IntegrityProblem? {
        let database = isStreams ? databases.streams : databases.eventIDs
        return try reading { txn in
            try txn.withCursor(database) { cursor in
                var entry = try cursor.first()
                while let current = entry {
                    if case .passed(let parsed) = IndexEntry.parse(current, isStreams: isStreams), parsed.position <= bound {
                        let stored = try BigEndian.bytes(parsed.position).withUnsafeBytes { try txn.get(databases.records, key: $0) }
                        let record = try stored.map { try RecordView($0, position: parsed.position, path: path) }
                        if record.map(parsed.matches) != true {
                            return IndexEntry.problem(
                                current, isStreams: isStreams,
                                reason: "it points at position \(parsed.position), whose record is not the one it names")
                        }
                    }
                    entry = try cursor.next()
                }
                return nil
            }
        }
    }
}

/// A value that passed a check, or the problem the check found.
enum Checked<Value> {
    case passed(Value)
    case failed(IntegrityProblem)
}

extension Checked: Sendable where Value: Sendable {}

/// One parsed entry of `streams` or `event-ids`, pointing into the entry's bytes.
private struct IndexEntry {
    /// The stream id (for `streams`) or the 16-byte event id (for `event-ids`).
    let name: UnsafeRawBufferPointer
    /// The stream version (`streams` only).
    let version: UInt64
    let position: UInt64
    let isStreams: Bool

    /// Parses an entry, or says why it does not parse.
    static func parse(_ entry: Cursor.Entry, isStreams: Bool) -> Checked<IndexEntry> {
        guard entry.value.count == 8 else {
            return .failed(problem(entry, isStreams: isStreams, reason: "its value has \(entry.value.count) bytes, not 8"))
        }
        let position = BigEndian.uint64(entry.value)
        if isStreams {
            let idLength = entry.key.count - 9
            guard idLength >= 0, entry.key[idLength] == 0 else {
                return .failed(problem(entry, isStreams: isStreams, reason: "its key is not a stream id, 0x00 and a version"))
            }
            return .passed(
                IndexEntry(
                    name: UnsafeRawBufferPointer(rebasing: entry.key[..<idLength]), version: BigEndian.uint64(entry.key, at: idLength + 1),
                    position: position, isStreams: true))
        }
        guard entry.key.count == 16 else {
            return .failed(problem(entry, isStreams: isStreams, reason: "its key has \(entry.key.count) bytes, not 16"))
        }
        return .passed(IndexEntry(name: entry.key, version: 0, position: position, isStreams: false))
    }

    func add(to digest: inout IndexDigest) {
        if isStreams {
            digest.addStream(name, version: version, position: position)
        } else {
            digest.addEventID(name, position: position)
        }
    }

    /// Whether `record` is the one the entry names.
    func matches(_ record: RecordView) -> Bool {
        if isStreams { return record.streamVersion == version && name.elementsEqual(record.streamIDBytes) }
        return name.elementsEqual(record.bytes[RecordFormat.Offset.eventID..<RecordFormat.Offset.eventID + 16])
    }

    static func problem(_ entry: Cursor.Entry, isStreams: Bool, reason: String) -> IntegrityProblem {
        let hex = entry.key.prefix(48).map { String(format: "%02x", $0) }.joined()
        let position = entry.value.count == 8 ? BigEndian.uint64(entry.value) : 0
        return IntegrityProblem(
            position: position, kind: .indexMismatch,
            detail: "the \(isStreams ? "stream" : "event-id") index entry under key \(hex): \(reason)")
    }
}
