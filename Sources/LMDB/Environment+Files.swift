//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB
import Foundation

extension Environment {
    /// The current map size in bytes.
    public var mapSize: Int {
        lock.withShared {
            guard !closed else { return 0 }
            var info = MDB_envinfo()
            mdb_env_info(pointer, &info)
            return info.me_mapsize
        }
    }

    /// The bytes of the data file that LMDB's pages take, through its last page: less than
    /// ``fileSize`` by what is written ahead (``EnvironmentOptions/writesAhead``).
    public var usedSize: Int {
        lock.withShared {
            guard !closed else { return 0 }
            return Self.usedBytes(pointer, pageSize: pageSize)
        }
    }

    /// The bytes of `environment`'s pages through the last page of its last commit.
    static func usedBytes(_ environment: OpaquePointer, pageSize: Int) -> Int {
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        return (Int(info.me_last_pgno) + 1) * pageSize
    }

    /// LMDB's descriptor of `environment`'s data file and the file's length (`fstat`: no path
    /// lookup, no owner names read as `FileManager`'s attributes do), or nil if either cannot be
    /// read (`errno` then says why: `EBADF` when LMDB has no descriptor).
    static func dataFile(_ environment: OpaquePointer) -> (descriptor: Int32, bytes: Int)? {
        var descriptor: Int32 = -1
        guard mdb_env_get_fd(environment, &descriptor) == MDB_SUCCESS, descriptor >= 0 else {
            errno = EBADF
            return nil
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return (descriptor, Int(status.st_size))
    }

    /// The bytes the data file takes on disk.
    public var fileSize: Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")
        return (attributes?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Flushes buffered commits to disk (useful in ``SyncMode/relaxed``).
    ///
    /// - Throws: an `EBADF` ``LMDBError`` after ``close()``, or LMDB's error when the flush fails.
    public func sync() throws {
        try lock.withShared {
            guard !closed else { throw closedError }
            try check(mdb_env_sync(pointer, 1), "mdb_env_sync", path: path)
        }
    }

    /// Writes a consistent copy of the environment, as of one read transaction, into the existing,
    /// empty directory at `directory` (`data.mdb` only; the copy gets its own lock file when opened).
    /// `compact` leaves out free pages and renumbers the rest. Writers keep running meanwhile. The
    /// copy is flushed before this returns.
    ///
    /// - Parameters:
    ///   - directory: an existing folder without a `data.mdb`.
    ///   - compact: whether to leave out free pages.
    /// - Throws: an `EBADF` ``LMDBError`` after ``close()``, LMDB's error when the copy cannot be
    ///   written (`EEXIST` when the folder holds a `data.mdb` already), or the `errno` of opening or
    ///   flushing the copy.
    public func copy(to directory: String, compact: Bool = true) throws {
        try lock.withShared {
            guard !closed else { throw closedError }
            try check(mdb_env_copy2(pointer, directory, compact ? UInt32(MDB_CP_COMPACT) : 0), "mdb_env_copy2", path: directory)
        }
        let fd = open(directory + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open the copy", path: directory) }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw LMDBError(code: errno, operation: "fsync the copy", path: directory) }
    }

    /// Entry count and shape of one database.
    ///
    /// - Parameter database: the database.
    /// - Returns: its entry count, tree depth, page size and pages.
    /// - Throws: an `EBADF` ``LMDBError`` after ``close()``, or LMDB's error when the read fails.
    public func statistics(of database: Database) throws -> DatabaseStatistics {
        try read { txn in
            var stat = MDB_stat()
            try check(mdb_stat(txn.pointer, database.handle, &stat), "mdb_stat", path: path)
            return DatabaseStatistics(
                entries: stat.ms_entries, depth: Int(stat.ms_depth), pageSize: Int(stat.ms_psize),
                pages: stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages)
        }
    }
}
