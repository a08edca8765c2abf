//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB
import Foundation
import Synchronization

/// One LMDB environment (a directory holding `data.mdb` and `lock.mdb`), opened once per process.
///
/// Read transactions may run on any thread (`MDB_NOTLS`); the owner runs write transactions on one
/// thread at a time. When a write fills the map, the transaction is aborted, the map is grown and
/// the write is run again, so `MDB_MAP_FULL` never reaches the caller.
// Unchecked Sendable: LMDB's environment handle is thread-safe with `MDB_NOTLS`; resizing and closing take `lock` exclusively.
public final class Environment: @unchecked Sendable {
    /// The directory of the environment.
    public let path: String
    /// The options it was opened with.
    public let options: EnvironmentOptions
    /// How many reader slots of dead processes were cleared when it was opened.
    public let staleReadersCleared: Int

    /// Replaced only under the exclusive lock, when the environment is reopened after a fatal error.
    private(set) var pointer: OpaquePointer
    /// The named databases opened so far, by handle, so that a reopened environment can give them
    /// the same handles again.
    let handles = HandleRegistry()
    /// Shared by every transaction, exclusive for growing the map, reopening and closing.
    let lock = ReadWriteLock()
    /// Written only under the exclusive lock.
    private(set) var closed = false
    private let registryKey: String
    /// Keeps the file written ahead of its last page (``EnvironmentOptions/writesAhead``); nil when
    /// off, read-only or not flushing.
    private let headroom: FileHeadroom?
    /// LMDB's page size for this environment.
    let pageSize: Int
    /// Answers ``isOpenInAnotherProcess``; nil for a read-only environment.
    private let otherProcesses: OtherProcesses?

    private static let openPaths = Mutex<Set<String>>([])

    /// Opens (and, unless read-only, creates) the environment in the directory at `path`.
    ///
    /// - Parameters:
    ///   - path: the environment's folder.
    ///   - options: the map size, the sync mode, the database and reader limits, and whether to open
    ///     read-only.
    /// - Throws: ``LMDBError``: `EACCES` when the folder cannot be created, `EBUSY` when this process
    ///   has the environment open already, `ENOENT` when a read-only environment has no data file,
    ///   `MDB_INVALID` for a truncated data file, or LMDB's code when it cannot open the files.
    public init(path: String, options: EnvironmentOptions = EnvironmentOptions()) throws {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        if !options.readOnly {
            do {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            } catch {
                throw LMDBError(code: EACCES, operation: "create directory", path: url.path)
            }
        }
        let key = url.resolvingSymlinksInPath().path
        let inserted = Self.openPaths.withLock { $0.insert(key).inserted }
        guard inserted else {
            throw LMDBError(code: EBUSY, operation: "open (the environment is already open in this process; share the open instance)", path: url.path)
        }
        var envPointer: OpaquePointer?
        var success = false
        defer {
            if !success {
                if let envPointer { mdb_env_close(envPointer) }
                _ = Self.openPaths.withLock { $0.remove(key) }
            }
        }
        try Self.openEnvironment(&envPointer, path: url.path, options: options, mapSize: options.initialMapSize)
        guard let envPointer else { throw LMDBError(code: ENOMEM, operation: "mdb_env_create", path: url.path) }
        // A data file shorter than its own metadata says would make reads fault (SIGBUS): refuse it.
        var stat = MDB_stat()
        mdb_env_stat(envPointer, &stat)
        let pageSize = Int(stat.ms_psize)
        let expectedBytes = Self.usedBytes(envPointer, pageSize: pageSize)
        guard let actualBytes = Self.dataFile(envPointer)?.bytes else {
            let code = errno
            throw LMDBError(code: code == 0 ? EIO : code, operation: "open (cannot read the data file's length)", path: url.path)
        }
        if actualBytes < expectedBytes {
            throw LMDBError(
                code: MDB_INVALID, operation: "open (the data file has \(actualBytes) bytes but its pages need \(expectedBytes): it was truncated)",
                path: url.path)
        }
        var dead: Int32 = 0
        try check(mdb_reader_check(envPointer, &dead), "mdb_reader_check", path: url.path)
        self.pointer = envPointer
        self.path = url.path
        self.options = options
        self.registryKey = key
        self.staleReadersCleared = Int(dead)
        self.pageSize = pageSize
        self.headroom =
            options.writesAhead && !options.readOnly && options.sync != .relaxed ? FileHeadroom(pageSize: pageSize) : nil
        self.otherProcesses = options.readOnly ? nil : OtherProcesses(environmentPath: url.path)
        success = true
    }

    deinit {
        close()
    }

    /// Creates an LMDB environment handle in `envPointer` and opens it at `path`. On failure
    /// `envPointer` may hold a handle that the caller must close.
    private static func openEnvironment(
        _ envPointer: inout OpaquePointer?, path: String, options: EnvironmentOptions,
        mapSize: Int
    ) throws {
        try check(mdb_env_create(&envPointer), "mdb_env_create", path: path)
        guard let envPointer else { throw LMDBError(code: ENOMEM, operation: "mdb_env_create", path: path) }
        try check(mdb_env_set_maxdbs(envPointer, MDB_dbi(options.maxDatabases)), "mdb_env_set_maxdbs", path: path)
        try check(mdb_env_set_maxreaders(envPointer, options.maxReaders), "mdb_env_set_maxreaders", path: path)
        try check(mdb_env_set_mapsize(envPointer, Self.pageAligned(mapSize)), "mdb_env_set_mapsize", path: path)
        var flags = UInt32(MDB_NOTLS)
        if options.sync == .relaxed { flags |= UInt32(MDB_NOSYNC) }
        if options.sync == .lastCommitMayRollBack { flags |= UInt32(MDB_NOMETASYNC) }
        if options.readOnly { flags |= UInt32(MDB_RDONLY) }
        if options.readOnly && !FileManager.default.fileExists(atPath: path + "/data.mdb") {
            throw LMDBError(code: ENOENT, operation: "mdb_env_open", path: path)
        }
        try check(mdb_env_open(envPointer, path, flags, 0o644), "mdb_env_open", path: path)
    }

    /// After a failed write of a commit record LMDB refuses every further transaction
    /// (`MDB_PANIC`) until the environment is closed and opened again. This does that, in place:
    /// the file still holds the last commit that succeeded, and the named databases get their
    /// old handles back. When they can't (a handle freed by a dropped database left a gap), the
    /// environment stays unusable and says why; reopening it by hand then works.
    private func reopenAfterFatalError() throws {
        try lock.withExclusive {
            guard !closed else { throw closedError }
            // Another thread may have reopened it already: a fresh transaction tells.
            var probe: OpaquePointer?
            if mdb_txn_begin(pointer, nil, UInt32(MDB_RDONLY), &probe) == MDB_SUCCESS {
                mdb_txn_abort(probe)
                return
            }
            var info = MDB_envinfo()
            mdb_env_info(pointer, &info)
            mdb_env_close(pointer)
            var fresh: OpaquePointer?
            do {
                try Self.openEnvironment(&fresh, path: path, options: options, mapSize: info.me_mapsize)
            } catch {
                if let fresh { mdb_env_close(fresh) }
                // Keep a handle that refuses everything rather than a dangling one.
                var placeholder: OpaquePointer?
                mdb_env_create(&placeholder)
                pointer = placeholder!
                closed = true
                _ = Self.openPaths.withLock { $0.remove(registryKey) }
                throw error
            }
            pointer = fresh!
            let named = handles.snapshot()
            guard !named.isEmpty else { return }
            var txn: OpaquePointer?
            try check(mdb_txn_begin(pointer, nil, options.readOnly ? UInt32(MDB_RDONLY) : 0, &txn), "mdb_txn_begin (reopen)", path: path)
            for (handle, name) in named {
                var dbi: MDB_dbi = 0
                let code = mdb_dbi_open(txn, name, 0, &dbi)
                guard code == MDB_SUCCESS, dbi == handle else {
                    mdb_txn_abort(txn)
                    throw LMDBError(
                        code: MDB_PANIC,
                        operation:
                            "reopen after a fatal write error (database \"\(name)\" can't get its handle back; close and open the environment)",
                        path: path)
                }
            }
            try check(mdb_txn_commit(txn), "mdb_txn_commit (reopen)", path: path)
        }
    }

    /// Closes the environment; waits for running transactions. Later calls throw `EBADF` errors.
    public func close() {
        lock.withExclusive {
            guard !closed else { return }
            closed = true
            mdb_env_close(pointer)
            // After LMDB has let go of its own lock on the file (see `OtherProcesses`).
            otherProcesses?.close()
            _ = Self.openPaths.withLock { $0.remove(registryKey) }
        }
    }

    /// True when another process has this environment open now (or when that cannot be told).
    ///
    /// One system call, which waits for nothing: a writer that must not wait for another process's
    /// write transaction asks this first. The answer may change right after: another process may
    /// open the environment the next moment.
    public var isOpenInAnotherProcess: Bool {
        lock.withShared { closed ? true : otherProcesses?.present ?? true }
    }

    /// True once ``close()`` ran.
    public var isClosed: Bool {
        lock.withShared { closed }
    }

    // MARK: Transactions

    /// Runs `body` in a short read-only transaction. Never blocks, and is never blocked by, the writer.
    /// The buffers `body` sees point into the map and are valid only inside it.
    ///
    /// Inlinable, over a core that is not generic: a generic function compiled in this module
    /// would look up the metadata of its result type at run time on every call, which cost a
    /// point read more than its transaction (about 1,000 instructions).
    ///
    /// - Parameter body: reads through the transaction; what it sees is valid only during the call.
    /// - Returns: what `body` returns.
    /// - Throws: `body`'s error, an `EBADF` ``LMDBError`` after ``close()``, or LMDB's error when the
    ///   transaction cannot begin.
    @inlinable
    public func read<T>(_ body: (Transaction) throws -> T) throws -> T {
        var result: T?
        try withReadTransaction { txn in result = try body(txn) }
        return result!
    }

    /// Runs `body` once in a read-only transaction (again, after a resized map was adopted or the
    /// environment reopened, if the first one could not begin).
    @usableFromInline
    func withReadTransaction(_ body: (Transaction) throws -> Void) throws {
        while true {
            let began: Int32? = try lock.withShared {
                guard !closed else { throw closedError }
                var txn: OpaquePointer?
                let code = mdb_txn_begin(pointer, nil, UInt32(MDB_RDONLY), &txn)
                if code == MDB_MAP_RESIZED || code == MDB_PANIC { return code }
                try check(code, "mdb_txn_begin (read)", path: path)
                defer { mdb_txn_abort(txn) }
                try body(Transaction(pointer: txn!, path: path, readOnly: true, handles: handles))
                return nil
            }
            switch began {
            case nil: return
            case MDB_PANIC: try reopenAfterFatalError()
            default: try adoptResizedMap()
            }
        }
    }

    /// Runs `body` in a write transaction and commits it. Call it from one thread at a time, and
    /// never suspend inside `body`. If the map fills, the transaction is aborted, the map grows and
    /// `body` runs again: it must not have effects outside the transaction.
    ///
    /// - Parameter body: writes through the transaction; it may run more than once.
    /// - Returns: what `body` returns in the run that committed.
    /// - Throws: `body`'s error (nothing is committed then), an `EBADF` ``LMDBError`` after
    ///   ``close()``, `ENOSPC` when the disk is full, or LMDB's error when the transaction cannot begin
    ///   or commit.
    public func write<T>(_ body: (Transaction) throws -> T) throws -> T {
        while true {
            do {
                let outcome: Attempt<T> = try lock.withShared {
                    guard !closed else { throw closedError }
                    var txn: OpaquePointer?
                    let code = mdb_txn_begin(pointer, nil, 0, &txn)
                    if code == MDB_MAP_RESIZED || code == MDB_PANIC { return .retry(code) }
                    try check(code, "mdb_txn_begin (write)", path: path)
                    // With the write lock held, before this transaction's pages are written.
                    headroom?.extendIfNeeded(pointer, path: path)
                    let result: T
                    do {
                        result = try body(Transaction(pointer: txn!, path: path, readOnly: false, handles: handles))
                    } catch {
                        mdb_txn_abort(txn)
                        throw error
                    }
                    try commit(txn!)
                    return .done(result)
                }
                switch outcome {
                case let .done(value): return value
                case .retry(MDB_PANIC): try reopenAfterFatalError()
                case .retry: try adoptResizedMap()
                }
            } catch let error as LMDBError where error.isMapFull {
                try growMap()
            }
        }
    }

    /// Commits `txn`. A commit that fails for want of space is reported as `ENOSPC` with the space
    /// left: LMDB itself reports a short write (the disk filled up in the middle of a page) as `EIO`.
    private func commit(_ txn: OpaquePointer) throws {
        let code = mdb_txn_commit(txn)
        guard code != MDB_SUCCESS else { return }
        if code == EIO || code == ENOSPC || code == EDQUOT, let free = freeBytes(), free < 1 << 20 {
            throw LMDBError(code: ENOSPC, operation: "mdb_txn_commit (\(free) bytes left on the device)", path: path)
        }
        throw LMDBError(code: code, operation: "mdb_txn_commit", path: path)
    }

    /// The bytes an unprivileged writer may still use on the file system of the environment.
    ///
    /// - Returns: the free bytes, or nil when the file system cannot be asked.
    public func freeBytes() -> Int? {
        var status = statvfs()
        guard statvfs(path, &status) == 0 else { return nil }
        return Int(status.f_bavail) * Int(status.f_frsize)
    }

    /// Opens (or creates) the named database and returns its handle, valid until the environment closes.
    ///
    /// - Parameters:
    ///   - name: the database's name.
    ///   - create: whether to create it when missing (ignored, as false, for a read-only environment).
    /// - Returns: the database's handle.
    /// - Throws: an `MDB_NOTFOUND` ``LMDBError`` for a missing database that is not to be created,
    ///   `MDB_DBS_FULL` when the environment holds ``EnvironmentOptions/maxDatabases`` already, `EBADF`
    ///   after ``close()``, or LMDB's error when a transaction fails.
    public func openDatabase(_ name: String, create: Bool = true) throws -> Database {
        if options.readOnly || !create {
            return try lock.withShared {
                guard !closed else { throw closedError }
                var txn: OpaquePointer?
                try check(mdb_txn_begin(pointer, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin", path: path)
                var dbi: MDB_dbi = 0
                let code = mdb_dbi_open(txn, name, 0, &dbi)
                if code != MDB_SUCCESS {
                    mdb_txn_abort(txn)
                    throw LMDBError(code: code, operation: "mdb_dbi_open \"\(name)\"", path: path)
                }
                try check(mdb_txn_commit(txn), "mdb_txn_commit", path: path)
                handles.opened(dbi, name)
                return Database(handle: dbi, name: name)
            }
        }
        return try write { txn in try txn.openDatabase(name, create: true) }
    }

    /// Closes this process's handle of a named database without deleting the database, so that
    /// its slot (an environment has ``EnvironmentOptions/maxDatabases``) serves another. Only for a
    /// handle that no transaction or cursor of this process uses any more; a handle that no longer
    /// names `database` (closed already, or given to another database since) is left alone.
    ///
    /// - Parameter database: the handle to close.
    public func closeDatabase(_ database: Database) {
        lock.withExclusive {
            guard !closed, handles.name(of: database.handle) == database.name else { return }
            mdb_dbi_close(pointer, database.handle)
            handles.closed(database.handle)
        }
    }

    /// The names of the named databases in the environment (the keys of LMDB's main database).
    ///
    /// - Returns: the names, in byte order.
    /// - Throws: an `EBADF` ``LMDBError`` after ``close()``, or LMDB's error when the read fails.
    public func databaseNames() throws -> [String] {
        try read { txn in
            var dbi: MDB_dbi = 0
            try check(mdb_dbi_open(txn.pointer, nil, 0, &dbi), "mdb_dbi_open (main)", path: path)
            return try txn.withCursor(Database(handle: dbi, name: "(main)")) { cursor in
                var names: [String] = []
                var entry = try cursor.first()
                while let current = entry {
                    names.append(String(decoding: current.key, as: UTF8.self))
                    entry = try cursor.next()
                }
                return names
            }
        }
    }

    /// Clears the reader slots of processes that died inside a read transaction, which would
    /// otherwise keep old pages from reuse; returns how many. Opening does it too.
    ///
    /// - Returns: the number of reader slots cleared.
    /// - Throws: an `EBADF` ``LMDBError`` after ``close()``, or LMDB's error when the reader table
    ///   cannot be checked.
    public func clearStaleReaders() throws -> Int {
        try lock.withShared {
            guard !closed else { throw closedError }
            var dead: Int32 = 0
            try check(mdb_reader_check(pointer, &dead), "mdb_reader_check", path: path)
            return Int(dead)
        }
    }

    private func growMap() throws {
        try lock.withExclusive {
            guard !closed else { throw closedError }
            var info = MDB_envinfo()
            mdb_env_info(pointer, &info)
            let current = info.me_mapsize
            let step = min(max(current, 1 << 20), options.maxGrowthStep)
            let (grown, overflow) = current.addingReportingOverflow(step)
            guard !overflow else { throw LMDBError(code: MDB_MAP_FULL, operation: "grow map", path: path) }
            try check(mdb_env_set_mapsize(pointer, Self.pageAligned(grown)), "mdb_env_set_mapsize", path: path)
        }
    }

    /// Another process grew the map: take its size (`MDB_MAP_RESIZED`).
    private func adoptResizedMap() throws {
        try lock.withExclusive {
            guard !closed else { throw closedError }
            try check(mdb_env_set_mapsize(pointer, 0), "mdb_env_set_mapsize (adopt)", path: path)
        }
    }

    private enum Attempt<T> {
        case done(T)
        case retry(Int32)
    }

    var closedError: LMDBError {
        LMDBError(code: EBADF, operation: "use of a closed environment", path: path)
    }

    private static func pageAligned(_ size: Int) -> Int {
        let page = 4096
        return max(page, (size + page - 1) / page * page)
    }
}

/// A named database inside an environment.
