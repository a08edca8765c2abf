//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
internal import LMDB
import Synchronization

/// One copy of a projection's state: its databases and how far into the log it has come.
struct Generation: Sendable {
    let number: UInt32
    let databases: [String: Database]
    var checkpoint: UInt64
    /// The reads of this process inside the generation's databases now. Copies of one generation
    /// that the store keeps share it (see ``keepingReaders(of:)``).
    var readers = GenerationReaders()

    /// This generation, counting its reads with `existing`'s counter when that is the same
    /// generation (a copy re-read from the catalog must not lose the reads of the one it replaces).
    func keepingReaders(of existing: Generation?) -> Generation {
        guard let existing, existing.number == number else { return self }
        var copy = self
        copy.readers = existing.readers
        return copy
    }
}

/// How many reads of this process are inside a generation's databases. A replaced generation's
/// databases are deleted (their LMDB handles closed and their slots freed) only once it is zero.
final class GenerationReaders: Sendable {
    let count = Atomic<Int>(0)
}

/// The keys of the `projections-meta` database (text, so `mdb_dump` output reads well):
///
/// - `active/<name>` → u32: the generation serving reads
/// - `building/<name>` → u32: a generation being rebuilt beside it
/// - `next/<name>` → u32: the next generation number
/// - `gen/<name>/<n>/fingerprint` → UTF-8, `gen/<name>/<n>/checkpoint` → u64
/// - `retired/<name>/<n>` → empty: a replaced generation whose databases are deleted once this
///   process no longer reads them, or at the next open
/// - `gen/<name>/<n>/stream-build` → a rebuild applied stream by stream, under way: u64 the last
///   position it applies, u64 the records applied so far, then the id of the last stream done
///   (absent before the first). Meanwhile the generation's fingerprint carries
///   ``streamBuildSuffix``, so that a build that does not know this marker discards the generation.
///
/// A generation's databases are named `<name>#<n>/<database>`.
enum MetaKeys {
    static let database = "projections-meta"
    static func active(_ name: String) -> [UInt8] { Array("active/\(name)".utf8) }
    static func building(_ name: String) -> [UInt8] { Array("building/\(name)".utf8) }
    static func next(_ name: String) -> [UInt8] { Array("next/\(name)".utf8) }
    static func fingerprint(_ name: String, _ generation: UInt32) -> [UInt8] { Array("gen/\(name)/\(generation)/fingerprint".utf8) }
    static func checkpoint(_ name: String, _ generation: UInt32) -> [UInt8] { Array("gen/\(name)/\(generation)/checkpoint".utf8) }
    static func streamBuild(_ name: String, _ generation: UInt32) -> [UInt8] { Array("gen/\(name)/\(generation)/stream-build".utf8) }
    /// Appended to the fingerprint of a generation being rebuilt stream by stream.
    static let streamBuildSuffix = " (stream build under way)"
    static func retiredPrefix(_ name: String) -> [UInt8] { Array("retired/\(name)/".utf8) }
    static func retired(_ name: String, _ generation: UInt32) -> [UInt8] { Array("retired/\(name)/\(generation)".utf8) }
    static func databaseName(_ name: String, _ generation: UInt32, _ database: String) -> String { "\(name)#\(generation)/\(database)" }

    static func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    static func u32(_ bytes: [UInt8]?) -> UInt32? {
        guard let bytes, bytes.count == 4 else { return nil }
        return bytes.withUnsafeBytes { BigEndian.uint32($0) }
    }
    static func u64(_ bytes: [UInt8]?) -> UInt64? {
        guard let bytes, bytes.count == 8 else { return nil }
        return bytes.withUnsafeBytes { BigEndian.uint64($0) }
    }
}

/// Generation bookkeeping inside a write transaction of the projections environment.
struct GenerationCatalog {
    let transaction: Transaction
    let meta: Database

    /// Creates a new, empty generation with the projection's databases.
    func create(_ projection: any Projection) throws -> Generation {
        let name = projection.name
        let number = MetaKeys.u32(try transaction.get(meta, key: MetaKeys.next(name))) ?? 1
        try transaction.put(meta, key: MetaKeys.next(name), value: MetaKeys.u32(number + 1))
        try transaction.put(meta, key: MetaKeys.fingerprint(name, number), value: Array(projection.fingerprint.utf8))
        try transaction.put(meta, key: MetaKeys.checkpoint(name, number), value: BigEndian.bytes(0))
        var databases: [String: Database] = [:]
        for database in projection.databaseNames {
            let handle = try transaction.openDatabase(MetaKeys.databaseName(name, number, database), create: true)
            try transaction.clear(handle)
            databases[database] = handle
        }
        return Generation(number: number, databases: databases, checkpoint: 0)
    }

    /// Opens an existing generation.
    func open(_ projection: any Projection, number: UInt32) throws -> Generation {
        var databases: [String: Database] = [:]
        for database in projection.databaseNames {
            databases[database] = try transaction.openDatabase(MetaKeys.databaseName(projection.name, number, database), create: true)
        }
        let checkpoint = MetaKeys.u64(try transaction.get(meta, key: MetaKeys.checkpoint(projection.name, number))) ?? 0
        return Generation(number: number, databases: databases, checkpoint: checkpoint)
    }

    func fingerprint(_ name: String, _ number: UInt32) throws -> String? {
        try transaction.get(meta, key: MetaKeys.fingerprint(name, number)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether a generation was built (or is being rebuilt stream by stream) for this
    /// projection's current fingerprint.
    func matches(_ projection: any Projection, _ number: UInt32) throws -> Bool {
        let stored = try fingerprint(projection.name, number)
        if stored == projection.fingerprint { return true }
        guard stored == projection.fingerprint + MetaKeys.streamBuildSuffix else { return false }
        return try transaction.get(meta, key: MetaKeys.streamBuild(projection.name, number)) != nil
    }

    /// Marks a generation as replaced and empties its databases. They are deleted once no read of
    /// this process is inside them (``drop(_:_:)``), or at the next open.
    func retire(_ name: String, _ generation: Generation) throws {
        for database in generation.databases.values { try transaction.clear(database) }
        try transaction.put(meta, key: MetaKeys.retired(name, generation.number), value: [])
    }

    /// Deletes a generation this process retired (or saw replaced), through its own handles
    /// (which closes them and frees their slots), with its bookkeeping. False when it is no longer
    /// marked retired: another process deleted it already, and the caller closes its handles.
    func drop(_ name: String, _ generation: Generation) throws -> Bool {
        guard try transaction.get(meta, key: MetaKeys.retired(name, generation.number)) != nil else { return false }
        for database in generation.databases.values { try transaction.drop(database) }
        try deleteBookkeeping(name, generation.number)
        return true
    }

    private func deleteBookkeeping(_ name: String, _ number: UInt32) throws {
        _ = try transaction.delete(meta, key: MetaKeys.retired(name, number))
        _ = try transaction.delete(meta, key: MetaKeys.fingerprint(name, number))
        _ = try transaction.delete(meta, key: MetaKeys.checkpoint(name, number))
        _ = try transaction.delete(meta, key: MetaKeys.streamBuild(name, number))
    }

    /// Deletes the databases and bookkeeping of retired generations.
    func dropRetired(_ projection: any Projection) throws {
        let prefix = MetaKeys.retiredPrefix(projection.name)
        let retired: [UInt32] = try transaction.withCursor(meta) { cursor in
            var numbers: [UInt32] = []
            var entry = try cursor.seek(atOrAfter: prefix)
            while let current = entry, current.key.starts(with: prefix) {
                if let number = UInt32(String(decoding: current.key.dropFirst(prefix.count), as: UTF8.self)) { numbers.append(number) }
                entry = try cursor.next()
            }
            return numbers
        }
        for number in retired {
            for database in projection.databaseNames {
                if let handle = try? transaction.openDatabase(MetaKeys.databaseName(projection.name, number, database), create: false) {
                    try transaction.drop(handle)
                }
            }
            try deleteBookkeeping(projection.name, number)
        }
    }
}
