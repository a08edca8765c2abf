//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension EventLog: ClaimListing {
    /// The prefix of the `meta` keys that belong to the application writing the log.
    static let applicationMetadataPrefix = "app:"

    /// A value the application stored with the log under `name` (see ``setMetadataIfAbsent(_:_:)``), or nil.
    ///
    /// - Parameter name: the value's name (without the `app:` prefix).
    /// - Returns: the stored bytes, or nil when nothing is stored under `name`.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func metadata(_ name: String) throws -> [UInt8]? {
        let key = Array((Self.applicationMetadataPrefix + name).utf8)
        return try reading { txn in try txn.get(databases.meta, key: key) }
    }

    /// Stores `value` under `name` in the log's `meta` database unless a value is there already, in
    /// one durable write transaction, and returns the value stored now (`value`, or the one another
    /// writer, perhaps another process, put there first). The application's own settings that must
    /// travel with the log (the account store records how its user-id claims are keyed) live here.
    /// `name` is 1–200 bytes; the key is `app:` followed by it.
    ///
    /// - Parameters:
    ///   - name: the value's name, 1–200 bytes.
    ///   - value: the value to store when none is there.
    /// - Returns: `value`, or the value another writer stored first.
    /// - Throws: `EventLogError.invalidEvent` for a name of the wrong length, `.storage` for a log
    ///   opened read-only or a failed write, `.diskFull` when the disk is full.
    @discardableResult
    public func setMetadataIfAbsent(_ name: String, _ value: [UInt8]) throws -> [UInt8] {
        try writeMetadata(name) { txn, key in
            if let existing = try txn.get(databases.meta, key: key) { return existing }
            try txn.put(databases.meta, key: key, value: value)
            return value
        }
    }

    /// Replaces the value under `name` when it is `expected` (nil: absent); returns whether it did.
    ///
    /// - Parameters:
    ///   - name: the value's name, 1–200 bytes.
    ///   - expected: the value that must be stored now, or nil for none.
    ///   - value: the new value.
    /// - Returns: true when the value was replaced, false when another value was stored.
    /// - Throws: `EventLogError.invalidEvent` for a name of the wrong length, `.storage` for a log
    ///   opened read-only or a failed write, `.diskFull` when the disk is full.
    @discardableResult
    public func replaceMetadata(_ name: String, expected: [UInt8]?, with value: [UInt8]) throws -> Bool {
        try writeMetadata(name) { txn, key in
            guard try txn.get(databases.meta, key: key) == expected else { return false }
            try txn.put(databases.meta, key: key, value: value)
            return true
        }
    }

    private func writeMetadata<T>(_ name: String, _ body: (Transaction, [UInt8]) throws -> T) throws -> T {
        guard !name.utf8.isEmpty, name.utf8.count <= 200 else {
            throw EventLogError.invalidEvent(reason: "a metadata name must have 1–200 bytes, \"\(name.prefix(40))\" has \(name.utf8.count)")
        }
        guard !options.readOnly else {
            throw readOnlyError("write metadata to")
        }
        let key = Array((Self.applicationMetadataPrefix + name).utf8)
        do {
            let result = try environment.write { txn in try body(txn, key) }
            // The relaxed mode skips the commit's flush: metadata is flushed in every mode.
            try environment.sync()
            return result
        } catch let error as EventLogError {
            throw error
        } catch {
            throw EventLogError.wrapping(error, path: path)
        }
    }

    /// Up to `limit` claims that start with `prefix`, in key order, with the stream that holds each.
    ///
    /// - Parameters:
    ///   - prefix: the start every listed claim shares (empty: all claims).
    ///   - limit: the most claims to list.
    /// - Returns: the claims and the streams that hold them, in the byte order of the claims.
    /// - Throws: `EventLogError.closed` after `close()`, or `.storage` when the read fails.
    public func claims(withPrefix prefix: String, limit: Int = 100) throws -> [(claim: String, owner: String)] {
        let start = Array(prefix.utf8)
        return try reading { txn in
            try txn.withCursor(databases.claims) { cursor in
                var found: [(String, String)] = []
                var entry = try cursor.seek(atOrAfter: start)
                while let current = entry, found.count < limit, current.key.starts(with: start) {
                    found.append((String(decoding: current.key, as: UTF8.self), String(decoding: current.value, as: UTF8.self)))
                    entry = try cursor.next()
                }
                return found
            }
        }
    }

    /// Writes a consistent, compacted copy of the log as of one moment into `directory` (created
    /// when missing; it must hold no log). Appends by this and other processes go on meanwhile; the
    /// copy holds every record committed before it started, with the same positions and hashes.
    ///
    /// - Parameter directory: the folder to write the copy to.
    /// - Throws: the file system's error when the folder cannot be created; `EventLogError.diskFull`
    ///   or `.storage` when the copy fails (for example when the folder holds a log already).
    public func copy(to directory: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try environment.copy(to: directory, compact: true)
        } catch {
            throw EventLogError.wrapping(error, path: directory)
        }
    }
}
