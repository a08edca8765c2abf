//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CRawLMDB
import Foundation
import SpeziAccountStore

/// The physical limit of the storage: LMDB driven through its C API only, with no checksum, no
/// hash chain, no stream index and no event-id index. Every workload here has a twin on the log.
struct RawLMDBError: Error, CustomStringConvertible {
    let operation: String
    let code: Int32
    var description: String { "raw LMDB \(operation) failed: \(String(cString: mdb_strerror(code)))" }
}

@inline(__always)
func check(_ code: Int32, _ operation: String) throws {
    if code != 0 {
        throw RawLMDBError(operation: operation, code: code)
    }
}

/// One raw LMDB environment with two databases: `records` keyed by big-endian positions, and
/// `states` (account id → `AccountState.encoded()`) for the workloads that keep a details table.
final class RawLMDB: @unchecked Sendable {
    enum Sync {
        /// Two fsyncs per commit, as the log's durable mode.
        case durable
        /// No fsync (MDB_NOSYNC), as the log's relaxed mode.
        case relaxed
        /// No fsync of the meta page (MDB_NOMETASYNC), as the projections' default.
        case lastCommitMayRollBack
    }

    let env: OpaquePointer
    var records: MDB_dbi = 0
    var states: MDB_dbi = 0

    init(directory: URL, sync: Sync, mapSize: Int = 16 << 30) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "env_create")
        guard let env else { throw RawLMDBError(operation: "env_create", code: EINVAL) }
        self.env = env
        try check(mdb_env_set_mapsize(env, mapSize), "set_mapsize")
        try check(mdb_env_set_maxdbs(env, 4), "set_maxdbs")
        try check(mdb_env_set_maxreaders(env, 256), "set_maxreaders")
        var flags = UInt32(MDB_NOTLS)
        switch sync {
        case .durable: break
        case .relaxed: flags |= UInt32(MDB_NOSYNC)
        case .lastCommitMayRollBack: flags |= UInt32(MDB_NOMETASYNC)
        }
        try check(mdb_env_open(env, directory.path, flags, 0o644), "env_open")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        try check(mdb_dbi_open(txn, "records", UInt32(MDB_CREATE), &records), "dbi_open")
        try check(mdb_dbi_open(txn, "states", UInt32(MDB_CREATE), &states), "dbi_open")
        try check(mdb_txn_commit(txn), "txn_commit")
    }

    convenience init(directory: URL, durable: Bool) throws {
        try self.init(directory: directory, sync: durable ? .durable : .relaxed)
    }

    deinit {
        mdb_env_close(env)
    }

    // MARK: Transactions

    /// Runs `body` in a write transaction and commits it (aborts it if `body` throws).
    func write<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        guard let txn else { throw RawLMDBError(operation: "txn_begin", code: EINVAL) }
        let result: T
        do {
            result = try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(mdb_txn_commit(txn), "txn_commit")
        return result
    }

    /// Runs `body` in a read-only transaction.
    func read<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
        guard let txn else { throw RawLMDBError(operation: "txn_begin", code: EINVAL) }
        defer { mdb_txn_abort(txn) }
        return try body(txn)
    }

    /// Puts `value` under `key` (the bytes are copied by LMDB).
    @inline(__always)
    func put(_ txn: OpaquePointer, _ dbi: MDB_dbi, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: Int32 = 0) throws {
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var dataVal = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_put(txn, dbi, &keyVal, &dataVal, UInt32(flags)), "put")
    }

    /// The value under `key`, in place (valid until the transaction ends), or nil.
    @inline(__always)
    func get(_ txn: OpaquePointer, _ dbi: MDB_dbi, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var dataVal = MDB_val()
        let code = mdb_get(txn, dbi, &keyVal, &dataVal)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "get")
        return UnsafeRawBufferPointer(start: dataVal.mv_data, count: dataVal.mv_size)
    }

    /// Puts a record at `position` (appending: positions only grow).
    @inline(__always)
    func putRecord(_ txn: OpaquePointer, position: UInt64, _ value: [UInt8]) throws {
        var key = position.bigEndian
        try withUnsafeBytes(of: &key) { keyBytes in
            try value.withUnsafeBytes { try put(txn, records, key: keyBytes, value: $0, flags: MDB_APPEND) }
        }
    }

    /// The last record's position (0 when there is none), read in `txn`.
    func lastPosition(_ txn: OpaquePointer) throws -> UInt64 {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, records, &cursor), "cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var data = MDB_val()
        let code = mdb_cursor_get(cursor, &key, &data, MDB_LAST)
        if code == MDB_NOTFOUND { return 0 }
        try check(code, "cursor_get")
        return UInt64(bigEndian: key.mv_data.loadUnaligned(as: UInt64.self))
    }

    /// Calls `body` with every record after `position` (at most `limit`), in place, in order.
    func forEachRecord(
        _ txn: OpaquePointer, after position: UInt64, limit: Int = .max,
        _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, records, &cursor), "cursor_open")
        defer { mdb_cursor_close(cursor) }
        var start = (position + 1).bigEndian
        return try withUnsafeMutableBytes(of: &start) { startBytes in
            var key = MDB_val(mv_size: 8, mv_data: startBytes.baseAddress)
            var data = MDB_val()
            var count = 0
            var code = mdb_cursor_get(cursor, &key, &data, MDB_SET_RANGE)
            while code == 0, count < limit {
                count += 1
                try body(
                    UInt64(bigEndian: key.mv_data.loadUnaligned(as: UInt64.self)), UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
                code = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
            }
            guard code == 0 || code == MDB_NOTFOUND else { throw RawLMDBError(operation: "cursor_get", code: code) }
            return count
        }
    }

    // MARK: Plain appends (the log-only workloads)

    /// Appends `count` copies of `value` at positions `first…`, all in one write transaction.
    func appendBatch(first: UInt64, count: Int, value: [UInt8]) throws {
        try write { txn in
            for offset in 0..<count { try putRecord(txn, position: first + UInt64(offset), value) }
        }
    }

    /// Appends `values` at positions `first…`, all in one write transaction.
    func appendBatch(first: UInt64, values: ArraySlice<[UInt8]>) throws {
        try write { txn in
            for (offset, value) in values.enumerated() { try putRecord(txn, position: first + UInt64(offset), value) }
        }
    }

    /// Appends one value per transaction from `writers` threads at once, `perWriter` each: writer
    /// `w`'s `i`-th append is `values[w * perWriter + i]`.
    /// LMDB admits one writer at a time, so the threads queue on its write lock; raw LMDB has no
    /// group commit, so every append pays its own commit (and, durable, its own fsync).
    func concurrentSingleAppends(writers: Int, perWriter: Int, values: [[UInt8]]) throws {
        let failure = ErrorBox()
        let done = DispatchGroup()
        for writer in 0..<writers {
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                do {
                    for index in 0..<perWriter {
                        let value = values[writer * perWriter + index]
                        try write { txn in try putRecord(txn, position: try lastPosition(txn) + 1, value) }
                    }
                } catch {
                    failure.set(error)
                }
            }
        }
        done.wait()
        if let error = failure.error { throw error }
    }
}

/// The raw loop's record: a one-byte type tag, the commit time (8 bytes, microseconds), the
/// stream id (a length byte and its bytes), then the event's payload. Just enough framing to fold
/// and decode; no checksum, no version, no metadata.
enum RawFrame {
    static func make(type: String, timestamp: Int64, stream: String, payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(10 + stream.utf8.count + payload.count)
        bytes.append(Dataset.typeTags[type]!)
        withUnsafeBytes(of: timestamp.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(stream.utf8.count))
        bytes.append(contentsOf: stream.utf8)
        bytes.append(contentsOf: payload)
        return bytes
    }

    /// The parts of a stored record, in place.
    struct View {
        let type: String
        let timestamp: Int64
        let stream: UnsafeRawBufferPointer
        let payload: UnsafeRawBufferPointer

        init(_ bytes: UnsafeRawBufferPointer) {
            type = Dataset.typeNames[Int(bytes[0])]
            timestamp = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 1, as: Int64.self))
            let streamLength = Int(bytes[9])
            stream = UnsafeRawBufferPointer(rebasing: bytes[10..<(10 + streamLength)])
            payload = UnsafeRawBufferPointer(rebasing: bytes[(10 + streamLength)...])
        }

        var date: Date { Date(timeIntervalSince1970: Double(timestamp) / 1_000_000) }
    }
}

/// The current time in microseconds since 1970, as the log stamps its records.
func microsecondsNow() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
}

/// Holds the first error raised by any of several threads.
final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var error: (any Error)?
    func set(_ error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        if self.error == nil { self.error = error }
    }
}
