//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB

/// Flags for `Transaction.put(_:key:value:flags:)`.
public struct PutFlags: OptionSet, Sendable {
    /// The raw bits of the options.
    public let rawValue: UInt32
    /// Creates options from their raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Fail with `MDB_KEYEXIST` instead of overwriting.
    public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// The key sorts after every key in the database: a cheap sequential insert.
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
}

/// A read or write transaction, valid only inside the closure that received it.
public struct Transaction {
    let pointer: OpaquePointer
    let path: String
    /// True for read-only transactions.
    public let readOnly: Bool
    /// The environment's record of open handles.
    let handles: HandleRegistry

    /// The transaction's id: for a read transaction, the id of the commit it sees; for a write
    /// transaction, the id its commit will have (one more than the last commit's, whichever process
    /// made it). A writer that finds the id one past its own last commit knows no other process
    /// has written since.
    public var id: Int { mdb_txn_id(pointer) }

    /// The value stored under `key`, pointing into the map: copy it before the transaction ends.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - key: the key.
    /// - Returns: the value, or nil when the key is absent.
    /// - Throws: ``LMDBError`` when LMDB refuses the lookup (a bad handle, a key longer than LMDB
    ///   accepts).
    public func get(_ database: Database, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var value = MDB_val()
        let code = mdb_get(pointer, database.handle, &keyVal, &value)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_get \"\(database.name)\"", path: path)
        return UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }

    /// The value stored under `key`, copied.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - key: the key.
    /// - Returns: a copy of the value, or nil when the key is absent.
    /// - Throws: ``LMDBError`` when LMDB refuses the lookup (a bad handle, a key longer than LMDB
    ///   accepts).
    public func get(_ database: Database, key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { keyBytes in
            try get(database, key: keyBytes).map { Array($0) }
        }
    }

    /// Stores `value` under `key`.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - key: the key (not empty, at most LMDB's key size).
    ///   - value: the value.
    ///   - flags: ``PutFlags/noOverwrite`` or ``PutFlags/append``, or none.
    /// - Throws: ``LMDBError``: `MDB_KEYEXIST` for an existing key with ``PutFlags/noOverwrite``,
    ///   `MDB_MAP_FULL` when the map is full (``Environment/write(_:)`` grows it and runs again),
    ///   `EACCES` in a read-only transaction, or another LMDB code.
    public func put(_ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws {
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var valueVal = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_put(pointer, database.handle, &keyVal, &valueVal, flags.rawValue), "mdb_put \"\(database.name)\"", path: path)
    }

    /// Stores `value` under `key`.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - key: the key (not empty, at most LMDB's key size).
    ///   - value: the value.
    ///   - flags: ``PutFlags/noOverwrite`` or ``PutFlags/append``, or none.
    /// - Throws: what the `put(_:key:value:flags:)` taking buffers throws.
    public func put(_ database: Database, key: [UInt8], value: [UInt8], flags: PutFlags = []) throws {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { valueBytes in
                try put(database, key: keyBytes, value: valueBytes, flags: flags)
            }
        }
    }

    /// Reserves `count` bytes under `key` and lets `fill` write them in place (`MDB_RESERVE`).
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - key: the key.
    ///   - count: the value's size in bytes.
    ///   - flags: ``PutFlags/noOverwrite`` or ``PutFlags/append``, or none.
    ///   - fill: writes the value into the reserved bytes.
    /// - Throws: `fill`'s error, or an ``LMDBError`` when the space cannot be reserved (as for a put).
    public func reserve(
        _ database: Database, key: UnsafeRawBufferPointer, count: Int, flags: PutFlags = [],
        fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var valueVal = MDB_val(mv_size: count, mv_data: nil)
        try check(
            mdb_put(pointer, database.handle, &keyVal, &valueVal, flags.rawValue | UInt32(MDB_RESERVE)),
            "mdb_put (reserve) \"\(database.name)\"", path: path)
        try fill(UnsafeMutableRawBufferPointer(start: valueVal.mv_data, count: count))
    }

    /// Removes `key`; returns false when it was not there.
    ///
    /// - Parameters:
    ///   - database: the database.
    ///   - key: the key.
    /// - Returns: true when the key was there.
    /// - Throws: ``LMDBError`` when LMDB refuses the deletion (`EACCES` in a read-only transaction).
    @discardableResult
    public func delete(_ database: Database, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { keyBytes in
            var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            let code = mdb_del(pointer, database.handle, &keyVal, nil)
            if code == MDB_NOTFOUND { return false }
            try check(code, "mdb_del \"\(database.name)\"", path: path)
            return true
        }
    }

    /// The number of entries in the database (from LMDB's statistics, without walking it).
    ///
    /// - Parameter database: the database.
    /// - Returns: the number of entries.
    /// - Throws: ``LMDBError`` for a bad handle.
    public func entryCount(_ database: Database) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(pointer, database.handle, &stat), "mdb_stat \"\(database.name)\"", path: path)
        return stat.ms_entries
    }

    /// Removes every entry of the database, keeping the database itself.
    ///
    /// - Parameter database: the database to empty.
    /// - Throws: ``LMDBError`` when LMDB refuses (`EACCES` in a read-only transaction).
    public func clear(_ database: Database) throws {
        try check(mdb_drop(pointer, database.handle, 0), "mdb_drop (empty) \"\(database.name)\"", path: path)
    }

    /// Deletes the database itself; its handle must not be used again.
    ///
    /// - Parameter database: the database to delete.
    /// - Throws: ``LMDBError`` when LMDB refuses (`EACCES` in a read-only transaction).
    public func drop(_ database: Database) throws {
        try check(mdb_drop(pointer, database.handle, 1), "mdb_drop (delete) \"\(database.name)\"", path: path)
        handles.closed(database.handle)
    }

    /// Opens a named database inside this transaction.
    ///
    /// - Parameters:
    ///   - name: the database's name.
    ///   - create: whether to create it when missing (only in a write transaction).
    /// - Returns: the database's handle.
    /// - Throws: an `MDB_NOTFOUND` ``LMDBError`` for a missing database that is not to be created,
    ///   `MDB_DBS_FULL` when the environment holds its most databases already, or another LMDB code.
    public func openDatabase(_ name: String, create: Bool) throws -> Database {
        var dbi: MDB_dbi = 0
        try check(mdb_dbi_open(pointer, name, create ? UInt32(MDB_CREATE) : 0, &dbi), "mdb_dbi_open \"\(name)\"", path: path)
        handles.opened(dbi, name)
        return Database(handle: dbi, name: name)
    }

    /// Runs `body` with a cursor over `database`, closed when `body` returns.
    ///
    /// - Parameters:
    ///   - database: the database to move through.
    ///   - body: uses the cursor; it is closed when `body` returns.
    /// - Returns: what `body` returns.
    /// - Throws: `body`'s error, or ``LMDBError`` when the cursor cannot be opened.
    public func withCursor<T>(_ database: Database, _ body: (inout Cursor) throws -> T) throws -> T {
        var cursorPointer: OpaquePointer?
        try check(mdb_cursor_open(pointer, database.handle, &cursorPointer), "mdb_cursor_open \"\(database.name)\"", path: path)
        defer { mdb_cursor_close(cursorPointer) }
        var cursor = Cursor(pointer: cursorPointer!, database: database, path: path)
        return try body(&cursor)
    }
}

/// A position in a database's sorted keys. Buffers it returns are valid until the transaction ends.
public struct Cursor {
    @usableFromInline let pointer: OpaquePointer
    let database: Database
    let path: String

    /// A key and its value, pointing into the map.
    public typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    private func move(_ operation: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws -> Entry? {
        var keyVal = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var value = MDB_val()
        let code = mdb_cursor_get(pointer, &keyVal, &value, operation)
        guard code == MDB_SUCCESS else { return try failed(code) }
        return (
            UnsafeRawBufferPointer(start: keyVal.mv_data, count: keyVal.mv_size),
            UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
        )
    }

    /// Stores `value` under `key` through the cursor, which then rests on the new entry. A key that
    /// falls between the first and last keys of the page the cursor rests on is placed without a
    /// search from the root (where `mdb_put`
    /// descends every time), so puts in key order that stay near each other are cheaper this way.
    ///
    /// - Parameters:
    ///   - key: the key.
    ///   - value: the value.
    ///   - flags: ``PutFlags/noOverwrite`` or ``PutFlags/append``, or none.
    /// - Throws: ``LMDBError`` as the transaction's `put(_:key:value:flags:)` throws it.
    public mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws {
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var valueVal = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_cursor_put(pointer, &keyVal, &valueVal, flags.rawValue), "mdb_cursor_put \"\(database.name)\"", path: path)
    }

    /// The first entry.
    ///
    /// - Returns: the entry, or nil for an empty database.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    public mutating func first() throws -> Entry? { try move(MDB_FIRST) }
    /// The last entry.
    ///
    /// - Returns: the entry, or nil for an empty database.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    public mutating func last() throws -> Entry? { try move(MDB_LAST) }
    /// The entry after the current one.
    ///
    /// - Returns: the entry, or nil past the last one.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    ///
    /// Inlined into the caller's loop (a full scan calls it for every record); anything but an
    /// entry or the end goes through `failed(_:)`, out of line.
    @inlinable
    public mutating func next() throws -> Entry? {
        var key = MDB_val()
        var value = MDB_val()
        let code = mdb_cursor_get(pointer, &key, &value, MDB_NEXT)
        guard code == MDB_SUCCESS else { return try failed(code) }
        return (UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size), UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
    }

    /// The end (`MDB_NOTFOUND`: nil), or the error for `code`.
    @usableFromInline
    func failed(_ code: Int32) throws -> Entry? {
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get \"\(database.name)\"", path: path)
        return nil
    }
    /// The entry before the current one.
    ///
    /// - Returns: the entry, or nil before the first one.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    public mutating func previous() throws -> Entry? { try move(MDB_PREV) }
    /// The first entry whose key is at or after `key`.
    ///
    /// - Parameter key: the key to look for.
    /// - Returns: the entry, or nil when every key sorts before `key`.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    public mutating func seek(atOrAfter key: UnsafeRawBufferPointer) throws -> Entry? { try move(MDB_SET_RANGE, key: key) }
    /// The first entry whose key is at or after `key`.
    ///
    /// - Parameter key: the key to look for.
    /// - Returns: the entry, or nil when every key sorts before `key`.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    public mutating func seek(atOrAfter key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { try move(MDB_SET_RANGE, key: $0) }
    }
    /// The last entry whose key is before `key`, or the last entry when none is at or after it.
    ///
    /// - Parameter key: the key to look before.
    /// - Returns: the entry, or nil when no key sorts before `key`.
    /// - Throws: ``LMDBError`` when LMDB cannot read the page.
    public mutating func seek(before key: [UInt8]) throws -> Entry? {
        if try seek(atOrAfter: key) != nil {
            return try previous()
        }
        return try last()
    }
}
