//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB
import Foundation

/// The physical limit of the storage: LMDB driven through its C API only, with no encoding,
/// no checksum and no indexes. Every workload here has a twin on the event log.
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

/// One raw LMDB environment with a single named database keyed by big-endian positions.
final class RawLMDB: @unchecked Sendable {
    let env: OpaquePointer
    var dbi: MDB_dbi = 0

    init(directory: URL, durable: Bool, mapSize: Int = 8 << 30) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "env_create")
        guard let env else { throw RawLMDBError(operation: "env_create", code: EINVAL) }
        self.env = env
        try check(mdb_env_set_mapsize(env, mapSize), "set_mapsize")
        try check(mdb_env_set_maxdbs(env, 4), "set_maxdbs")
        let flags = UInt32(MDB_NOTLS) | (durable ? 0 : UInt32(MDB_NOSYNC))
        try check(mdb_env_open(env, directory.path, flags, 0o644), "env_open")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        try check(mdb_dbi_open(txn, "records", UInt32(MDB_CREATE), &dbi), "dbi_open")
        try check(mdb_txn_commit(txn), "txn_commit")
    }

    deinit {
        mdb_env_close(env)
    }

    /// Appends `count` values at positions `first…`, all in one write transaction.
    func appendBatch(first: UInt64, count: Int, value: [UInt8]) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        do {
            try value.withUnsafeBytes { bytes in
                for offset in 0..<count {
                    var position = (first + UInt64(offset)).bigEndian
                    try withUnsafeMutableBytes(of: &position) { keyBytes in
                        var key = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                        var data = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                        try check(mdb_put(txn, dbi, &key, &data, UInt32(MDB_APPEND)), "put")
                    }
                }
            }
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(mdb_txn_commit(txn), "txn_commit")
    }

    /// Appends one value per transaction from `writers` threads at once, `perWriter` each.
    /// LMDB admits one writer at a time, so the threads queue on its write lock; raw LMDB has no
    /// group commit, so every append pays its own commit (and, durable, its own fsync).
    func concurrentSingleAppends(writers: Int, perWriter: Int, value: [UInt8]) throws {
        let next = Counter()
        let failure = ErrorBox()
        let done = DispatchGroup()
        for _ in 0..<writers {
            done.enter()
            let thread = Thread { [self] in
                defer { done.leave() }
                for _ in 0..<perWriter {
                    do {
                        var txn: OpaquePointer?
                        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
                        let position = next.increment()
                        var key = position.bigEndian
                        try withUnsafeMutableBytes(of: &key) { keyBytes in
                            try value.withUnsafeBytes { bytes in
                                var keyVal = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                                var data = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                                let code = mdb_put(txn, dbi, &keyVal, &data, UInt32(MDB_APPEND))
                                if code != 0 { mdb_txn_abort(txn) }
                                try check(code, "put")
                            }
                        }
                        try check(mdb_txn_commit(txn), "txn_commit")
                    } catch {
                        failure.set(error)
                        return
                    }
                }
            }
            thread.start()
        }
        done.wait()
        if let error = failure.error { throw error }
    }

    /// Reads every record with a cursor and touches its bytes; returns the record count.
    func scan(touch: ((UnsafeRawBufferPointer) -> UInt64)? = nil) throws -> (records: Int, checksum: UInt64) {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var data = MDB_val()
        var records = 0
        var checksum: UInt64 = 0
        var code = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
        while code == 0 {
            records += 1
            // Touch the first and last byte so the page is really read.
            let bytes = UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
            if let touch {
                checksum &+= touch(bytes)
            } else {
                checksum &+= UInt64(bytes.first ?? 0) &+ UInt64(bytes.last ?? 0) &+ UInt64(bytes.count)
            }
            code = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
        }
        guard code == MDB_NOTFOUND else { throw RawLMDBError(operation: "cursor_get", code: code) }
        return (records, checksum)
    }
}

/// A lock-protected counter shared by raw writer threads.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0
    func increment() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
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
