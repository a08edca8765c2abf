//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CRawLMDB
import Crypto
import EventLog
import EventLogProtocol
import Foundation
import LogRecordFormat

/// 3c. Import on a raw LMDB loop that does the log's work (issue 43's peer for the import row):
/// the same events, in the same 2,000-event transactions as the log's `import` row, each written
/// as the log writes it, over LMDB's C API with nothing in between.
///
/// Per event, timed: the record in the log's layout (FORMAT.md, "Record layout": position,
/// stream version, time, event id, schema version, stream id, type, the metadata pairs in key
/// order, payload) written straight into the space `MDB_RESERVE` gives, with `MDB_APPEND`
/// (positions only grow); its chain hash, SHA-256 of the previous hash and bytes `36..<n`
/// (swift-crypto, as the log); its CRC-32C of bytes `4..<n` (the log's own routine); and its two
/// index entries, `streams` (stream id, `0x00`, version → position) and `event-ids` (id →
/// position), each with `MDB_APPEND` when its key comes after the greatest key of its database
/// (tracked in memory), else a plain put that refuses a present key (`MDB_NOOVERWRITE`).
///
/// Untimed, as for the log: making the events. The loop does not read the stream's version
/// back or check it (it knows it), and writes the index entries in the transaction of their
/// records, in the order they come; the log checks expected versions and defers its index
/// entries to larger, sorted flushes (FORMAT.md, "Deferred indexing"): both are its own choices.
enum WorkEqualImport {
    /// One event as the loop gets it: its stream, its version there, and the event the log gets.
    struct Item {
        let stream: String
        let version: UInt64
        let event: ProposedEvent
    }

    static func importing(_ scale: Scale, into target: URL) throws -> Figure {
        let appendsPerCall = 400
        let raw = try RawLMDB(directory: target, sync: .relaxed)
        var loop = try Loop(raw)
        var watch = Stopwatch()
        for round in 0..<(Dataset.eventsPerAccount / Dataset.eventsPerCommit) {
            for first in stride(from: 0, to: scale.accounts, by: appendsPerCall) {
                let accounts = first..<min(first + appendsPerCall, scale.accounts)
                let indexes = (round * Dataset.eventsPerCommit)..<((round + 1) * Dataset.eventsPerCommit)
                let items = accounts.flatMap { account in
                    let stream = Dataset.accountId(account)
                    return indexes.map { index in
                        Item(
                            stream: stream, version: UInt64(index + 1),
                            event: Dataset.proposed(
                                Dataset.event(account: account, index: index), id: UInt64(account * Dataset.eventsPerAccount + index + 1)))
                    }
                }
                try watch.time { try raw.write { txn in try loop.put(items, txn: txn) } }
            }
        }
        precondition(loop.position == UInt64(scale.records), "the work-equal loop wrote \(loop.position) of \(scale.records) events")
        return Figure(
            "import-workequal",
            "import of \(count(scale.records)) events, 2,000 per commit: raw loop doing the log's work (record, CRC-32C, SHA-256 chain, both index entries)",
            .raw, operations: scale.records, seconds: watch.seconds)
    }

    /// Where the bulk step leaves the loop's store (removed with the data directory).
    static func directory(in data: URL) -> URL { data.appendingPathComponent("import-workequal") }

    /// The scan row's work-equal peer: a cursor walk over the loop's records (the log's layout,
    /// so the same bytes as the log's scan), each record's stored CRC-32C compared with one
    /// computed over its bytes `4..<n`, as the log checks every record it reads. Nil when the
    /// bulk step did not leave the store. Read once untimed first, as every scan row is.
    static func checkedScan(in data: URL) throws -> Figure? {
        let target = directory(in: data)
        guard FileManager.default.fileExists(atPath: target.path) else { return nil }
        let raw = try RawLMDB(directory: target, sync: .relaxed)
        func walk() throws -> (records: Int, mismatches: Int) {
            var mismatches = 0
            let records = try raw.read { txn in
                try raw.forEachRecord(txn, after: 0) { _, record in
                    let stored = UInt32(bigEndian: record.loadUnaligned(fromByteOffset: RecordFormat.Offset.checksum, as: UInt32.self))
                    let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: record[RecordFormat.Offset.chainHash...]))
                    if stored != computed { mismatches += 1 }
                }
            }
            return (records, mismatches)
        }
        _ = try walk()
        var watch = Stopwatch()
        let (records, mismatches) = try watch.time { try walk() }
        precondition(mismatches == 0, "\(mismatches) records of the work-equal store fail their CRC-32C")
        return Figure(
            "scan-checked-workequal",
            "full scan of \(count(records)) events, every byte read: raw loop over records in the log's layout (CRC-32C of each checked)",
            .raw, operations: records, seconds: watch.seconds)
    }

    /// The loop's state between transactions: the head of the chain and each index's greatest key.
    struct Loop {
        let raw: RawLMDB
        var streams: MDB_dbi = 0
        var eventIDs: MDB_dbi = 0
        private(set) var position: UInt64 = 0
        var hash = [UInt8](repeating: 0, count: 32)
        var timestamp: Int64 = 0
        var lastStreamKey: [UInt8]?
        var lastEventID: [UInt8]?
        var streamKey: [UInt8] = []

        init(_ raw: RawLMDB) throws {
            self.raw = raw
            var streams: MDB_dbi = 0
            var eventIDs: MDB_dbi = 0
            try raw.write { txn in
                try check(mdb_dbi_open(txn, "streams", UInt32(MDB_CREATE), &streams), "dbi_open")
                try check(mdb_dbi_open(txn, "event-ids", UInt32(MDB_CREATE), &eventIDs), "dbi_open")
            }
            self.streams = streams
            self.eventIDs = eventIDs
        }

        /// Writes `items` at the next positions, in `txn`.
        mutating func put(_ items: [Item], txn: OpaquePointer) throws {
            // One clock read per transaction, as the log reads it once per append.
            timestamp = max(microsecondsNow(), timestamp)
            for item in items {
                position += 1
                try putRecord(item, txn: txn)
                streamKey.removeAll(keepingCapacity: true)
                streamKey.append(contentsOf: item.stream.utf8)
                streamKey.append(0)
                withUnsafeBytes(of: item.version.bigEndian) { streamKey.append(contentsOf: $0) }
                let (raw, position) = (raw, position)
                try streamKey.withUnsafeBytes { key in
                    try Self.putIndex(raw, streams, key: key, position: position, last: &lastStreamKey, txn: txn)
                }
                try withUnsafeBytes(of: item.event.eventID.uuid) { key in
                    try Self.putIndex(raw, eventIDs, key: key, position: position, last: &lastEventID, txn: txn)
                }
            }
        }

        /// Writes `item`'s record alone at the next position, in `txn`: the log's layout, chain
        /// hash and CRC-32C, no index entries (the durable single row's layout-equal peer).
        mutating func putRecordOnly(_ item: Item, txn: OpaquePointer) throws {
            timestamp = max(microsecondsNow(), timestamp)
            position += 1
            try putRecord(item, txn: txn)
        }

        /// The metadata pairs in the stored order (FORMAT.md: ascending byte order of the key).
        static func pairs(_ metadata: EventMetadata) -> [(String, String)] {
            var result: [(String, String)] = []
            result.reserveCapacity(metadata.extra.count + 3)
            for (key, value) in metadata.extra where !EventMetadata.reservedKeys.contains(key) { result.append((key, value)) }
            if let actor = metadata.actor { result.append(("actor", actor)) }
            if let correlation = metadata.correlationID { result.append(("correlation-id", correlation)) }
            if let causation = metadata.causationID { result.append(("causation-id", causation)) }
            if result.count > 1 { result.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) } }
            return result
        }

        private mutating func putRecord(_ item: Item, txn: OpaquePointer) throws {
            let pairs = Self.pairs(item.event.metadata)
            let size = Self.size(item, pairs: pairs)
            var key = position.bigEndian
            var data = MDB_val(mv_size: size, mv_data: nil)
            try withUnsafeMutableBytes(of: &key) { keyBytes in
                var keyVal = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                try check(mdb_put(txn, raw.records, &keyVal, &data, UInt32(MDB_RESERVE | MDB_APPEND)), "put")
            }
            let record = UnsafeMutableRawBufferPointer(start: data.mv_data, count: size)
            _ = Self.write(item, pairs: pairs, into: record, position: position, timestamp: timestamp, hash: &hash)
        }

        /// The size of `item`'s record.
        static func size(_ item: Item, pairs: [(String, String)]) -> Int {
            var size = RecordFormat.fixedSize + 2 + item.stream.utf8.count + 2 + item.event.type.utf8.count + 2 + 4 + item.event.payload.count
            for (key, value) in pairs { size += 4 + key.utf8.count + value.utf8.count }
            return size
        }

        /// Writes `item`'s record (exactly `size(_:pairs:)` bytes) chained to `hash`, which
        /// becomes the record's hash, and returns its CRC-32C.
        static func write(
            _ item: Item, pairs: [(String, String)], into record: UnsafeMutableRawBufferPointer, position: UInt64, timestamp: Int64,
            hash: inout [UInt8]
        ) -> UInt32 {
            let event = item.event
            var writer = Writer(buffer: record, offset: RecordFormat.Offset.chainHash)
            hash.withUnsafeBytes { writer.bytes($0) }
            writer.u8(RecordFormat.layoutVersion)
            writer.u8(0)
            writer.u64(position)
            writer.u64(item.version)
            writer.u64(UInt64(bitPattern: timestamp))
            withUnsafeBytes(of: event.eventID.uuid) { writer.bytes($0) }
            writer.u32(event.schemaVersion)
            writer.string16(item.stream)
            writer.string16(event.type)
            writer.u16(UInt16(pairs.count))
            for (key, value) in pairs {
                writer.string16(key)
                writer.string16(value)
            }
            writer.u32(UInt32(event.payload.count))
            event.payload.withUnsafeBytes { writer.bytes($0) }
            precondition(writer.offset == record.count, "record size mismatch")
            // hash(p) = SHA-256(hash(p − 1) ‖ bytes 36..<n): the previous hash sits right before
            // the body, so the input is one range; then the new hash replaces it, and the CRC
            // covers bytes 4..<n.
            let hashed = UnsafeRawBufferPointer(rebasing: record[RecordFormat.Offset.chainHash...])
            let digest = SHA256.hash(data: hashed)
            digest.withUnsafeBytes { digest in
                hash.withUnsafeMutableBytes { $0.copyMemory(from: digest) }
                record.baseAddress!.advanced(by: RecordFormat.Offset.chainHash).copyMemory(from: digest.baseAddress!, byteCount: 32)
            }
            let crc = CRC32C.checksum(hashed)
            record.storeBytes(of: crc.bigEndian, toByteOffset: RecordFormat.Offset.checksum, as: UInt32.self)
            return crc
        }

        /// Puts `key` → `position` into `dbi`: with `MDB_APPEND` after the greatest key,
        /// else refused when present.
        private static func putIndex(
            _ raw: RawLMDB, _ dbi: MDB_dbi, key: UnsafeRawBufferPointer, position: UInt64, last: inout [UInt8]?, txn: OpaquePointer
        ) throws {
            let appends = last.map { $0.lexicographicallyPrecedes(key) } ?? true
            var value = position.bigEndian
            try withUnsafeBytes(of: &value) { valueBytes in
                try raw.put(txn, dbi, key: key, value: valueBytes, flags: appends ? MDB_APPEND : MDB_NOOVERWRITE)
            }
            guard appends else { return }
            if last == nil { last = [] }
            last!.removeAll(keepingCapacity: true)
            last!.append(contentsOf: key)
        }
    }

    /// Sequential big-endian writes into a record whose size was computed beforehand.
    struct Writer {
        let buffer: UnsafeMutableRawBufferPointer
        var offset: Int

        mutating func u8(_ value: UInt8) {
            buffer[offset] = value
            offset += 1
        }
        mutating func u16(_ value: UInt16) {
            buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
            offset += 2
        }
        mutating func u32(_ value: UInt32) {
            buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
            offset += 4
        }
        mutating func u64(_ value: UInt64) {
            buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        mutating func bytes(_ source: UnsafeRawBufferPointer) {
            guard source.count > 0 else { return }
            (buffer.baseAddress! + offset).copyMemory(from: source.baseAddress!, byteCount: source.count)
            offset += source.count
        }
        mutating func string16(_ value: String) {
            var value = value
            value.withUTF8 { utf8 in
                u16(UInt16(utf8.count))
                bytes(UnsafeRawBufferPointer(utf8))
            }
        }
    }
}
