//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation

/// The fixed-size key of a ``RecencyTable``: the first 16 bytes of the SHA-256 of a text key, so
/// that an entry costs the same whatever the client sent (a user id of 320 bytes, or one that
/// NFKC made 18 times longer, is 16 bytes here).
package struct TableKey: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    /// The key of `text`.
    package init(_ text: String) {
        var text = text
        let digest = text.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in digest.enumerated() where index < 16 {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.high = high
        self.low = low
    }
}

/// A table that holds at most `capacity` entries and, to make room, forgets the one touched
/// longest ago (least recently used first). Every operation is O(1): the entries form a doubly
/// linked list through two index arrays, newest at the head.
///
/// Memory is bounded by count and therefore by bytes: keys are ``TableKey``s of 16 bytes and a
/// value has a fixed size, so ``approximateBytes`` is at most `capacity` times one entry's size
/// plus the dictionary's slots. Not thread-safe: its owner keeps it under a `Mutex`.
package struct RecencyTable<Value> {
    private struct Entry {
        var key: TableKey
        var value: Value
        var older: Int
        var newer: Int
    }

    /// The most entries kept.
    package let capacity: Int
    private var index: [TableKey: Int] = [:]
    private var entries: [Entry] = []
    private var free: [Int] = []
    private var newest = -1
    private var oldest = -1
    /// Entries forgotten to make room, since the table was made.
    package private(set) var evictions = 0

    /// An empty table for at most `capacity` entries (at least 1).
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The entries held now.
    package var count: Int { index.count }

    /// An estimate of the memory the entries hold: the entry array and the dictionary's slots.
    package var approximateBytes: Int {
        entries.capacity * MemoryLayout<Entry>.stride + index.capacity * (MemoryLayout<TableKey>.stride + MemoryLayout<Int>.stride + 1)
    }

    /// The value under `key` without marking it as used.
    package func peek(_ key: TableKey) -> Value? {
        index[key].map { entries[$0].value }
    }

    /// The value under `key`, marked as the most recently used.
    package mutating func get(_ key: TableKey) -> Value? {
        guard let slot = index[key] else { return nil }
        moveToFront(slot)
        return entries[slot].value
    }

    /// Stores `value` under `key` as the most recently used, forgetting the oldest entry when the
    /// table is full.
    package mutating func set(_ key: TableKey, _ value: Value) {
        if let slot = index[key] {
            entries[slot].value = value
            moveToFront(slot)
            return
        }
        if index.count >= capacity, oldest >= 0 {
            remove(at: oldest)
            evictions += 1
        }
        let entry = Entry(key: key, value: value, older: newest, newer: -1)
        let slot: Int
        if let reused = free.popLast() {
            entries[reused] = entry
            slot = reused
        } else {
            entries.append(entry)
            slot = entries.count - 1
        }
        if newest >= 0 { entries[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
        index[key] = slot
    }

    /// Forgets `key`.
    package mutating func remove(_ key: TableKey) {
        guard let slot = index[key] else { return }
        remove(at: slot)
    }

    /// Forgets, oldest first, the entries for which `isStale` is true, stopping at the first that
    /// is not (the entries behind it were touched later). Returns how many went.
    @discardableResult
    package mutating func dropStale(_ isStale: (Value) -> Bool) -> Int {
        var dropped = 0
        while oldest >= 0, isStale(entries[oldest].value) {
            remove(at: oldest)
            dropped += 1
        }
        return dropped
    }

    private mutating func remove(at slot: Int) {
        let entry = entries[slot]
        if entry.older >= 0 { entries[entry.older].newer = entry.newer } else { oldest = entry.newer }
        if entry.newer >= 0 { entries[entry.newer].older = entry.older } else { newest = entry.older }
        index[entry.key] = nil
        free.append(slot)
    }

    private mutating func moveToFront(_ slot: Int) {
        guard slot != newest else { return }
        let entry = entries[slot]
        if entry.older >= 0 { entries[entry.older].newer = entry.newer } else { oldest = entry.newer }
        if entry.newer >= 0 { entries[entry.newer].older = entry.older }
        entries[slot].older = newest
        entries[slot].newer = -1
        if newest >= 0 { entries[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}
