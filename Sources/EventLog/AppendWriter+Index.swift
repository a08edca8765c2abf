//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
internal import LMDB
import Logging

/// The writer's side of deferred indexing: when the unindexed tail is written into the
/// `streams` and `event-ids` databases, and how.
extension AppendWriter {
    /// How many records the tail may hold after a commit of `events` events. Commits of many
    /// events (imports, bulk appends) let it grow to the bulk limit (at least 32 times the limit):
    /// with an index much larger than the tail, nearly every entry written lands on a page of its
    /// own, so a flush costs a page write per entry however few there are, and fewer, larger
    /// flushes share more pages (an import of 1 M events wrote 4.3 GB with flushes every 2,048
    /// records and 1.4 GB with flushes every 65,536). Small commits keep the limit, so a durable
    /// commit never carries a flush that large unless an import came just before it.
    func tailLimit(forCommitOf events: Int) -> Int {
        events >= Self.bulkCommitEvents ? max(indexTailLimit * 32, bulkIndexTailLimit) : indexTailLimit
    }

    /// The commit size from which a commit counts as a bulk append.
    static let bulkCommitEvents = 256

    /// Writes the tail's entries (with those of the transaction's own records) into the indexes,
    /// in the write transaction, each index in its key order: consecutive puts then walk the
    /// B-tree from left to right, and the pages they change are still in the CPU's caches, where
    /// positions order them at random.
    ///
    /// The items stay where they are: the sorts move small plain values that lead to them (moving
    /// the items would retain and release their strings at every step), and each key is built in
    /// one reused buffer.
    func writeIndex(_ txn: Transaction, through position: UInt64) throws {
        let items = tail.withState { $0.items }
        try items.withUnsafeBufferPointer { items in
            var order = items.indices.map { SortKey(leading: items[$0].streamLeadingBytes, index: $0) }
            order.sort { lhs, rhs in
                if lhs.leading != rhs.leading { return lhs.leading < rhs.leading }
                let (left, right) = (items[lhs.index], items[rhs.index])
                return left.stream == right.stream ? left.version < right.version : left.stream.utf8.lexicographicallyPrecedes(right.stream.utf8)
            }
            var key: [UInt8] = []
            try txn.withCursor(databases.streams) { cursor in
                var streams = try IndexAppender(&cursor)
                for entry in order {
                    let item = items[entry.index]
                    key.removeAll(keepingCapacity: true)
                    key.append(contentsOf: item.stream.utf8)
                    key.append(0)
                    withUnsafeBytes(of: item.version.bigEndian) { key.append(contentsOf: $0) }
                    var value = item.position.bigEndian
                    try key.withUnsafeBytes { key in
                        try withUnsafeBytes(of: &value) { value in try streams.put(key: key, value: value, &cursor) }
                    }
                }
            }
            order = items.indices.map { SortKey(leading: items[$0].eventIDOrder, index: $0) }
            order.sort { $0.leading < $1.leading }
            try txn.withCursor(databases.eventIDs) { cursor in
                var eventIDs = try IndexAppender(&cursor)
                for entry in order {
                    let item = items[entry.index]
                    var key = item.eventID.uuid
                    var value = item.position.bigEndian
                    try withUnsafeBytes(of: &key) { key in
                        try withUnsafeBytes(of: &value) { value in try eventIDs.put(key: key, value: value, &cursor) }
                    }
                }
            }
        }
        try databases.setIndexedThrough(txn, position)
    }

    /// Writes the whole tail into the indexes in a commit of its own (when the log closes, and
    /// when the writer has been idle for a while after bulk commits).
    func flushIndex() {
        var flushedThrough: UInt64?
        do {
            try environment.write { txn in
                flushedThrough = nil
                let head = try databases.lastPosition(txn)
                let tailCount = try tail.beginWrite(txn)
                guard tailCount > 0 else { return }
                try writeIndex(txn, through: head)
                flushedThrough = head
            }
        } catch {
            // Nothing is lost: the tail is rebuilt from the records when the log is next opened.
            logger.error("could not write the index tail", metadata: ["log": "\(path)", "error": "\(error)"])
            return
        }
        if let flushedThrough { tail.flushed(through: flushedThrough) }
    }
}

/// Puts an index's entries, in key order, in one write transaction, through one cursor. A key
/// after every key the database holds goes in with `MDB_APPEND`: the pages it fills are filled
/// whole instead of split in halves. An import into a new log, and the event ids the log makes
/// (time-ordered), put nearly all their keys that way. Any other key is put as usual, refused if
/// present; the cursor rests on the entry put last, so a key on that same page (the next version
/// of a stream, mostly) is placed without a search from the root. Which way a key goes is decided
/// on its bytes, in LMDB's own order, so a sort that disagreed with it could only cost speed,
/// never an `MDB_APPEND` error.
struct IndexAppender {
    /// The greatest key in the database, or nil while it is empty.
    private var last: [UInt8]?

    init(_ cursor: inout Cursor) throws {
        last = try cursor.last().map { [UInt8]($0.key) }
    }

    mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, _ cursor: inout Cursor) throws {
        if let last, !last.withUnsafeBytes({ KeyOrder.precedes($0, key) }) {
            try cursor.put(key: key, value: value, flags: .noOverwrite)
            return
        }
        try cursor.put(key: key, value: value, flags: .append)
        if last == nil { last = [] }
        last!.removeAll(keepingCapacity: true)
        last!.append(contentsOf: key)
    }
}
