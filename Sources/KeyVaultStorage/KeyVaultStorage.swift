//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Where a key vault keeps its bytes: a file beside an LMDB store, or tables beside a PostgreSQL
/// log, which every app server on that log shares.
///
/// The vault (`KeyVault` in the account store) decides what to write and when; a storage keeps
/// the 64-byte header and the numbered 128-byte slots exactly as FORMAT.md lays them out, and
/// makes every write durable before it returns (the file: `fdatasync`; PostgreSQL: the commit of
/// ``withLock(exclusive:_:)``'s transaction, with `synchronous_commit = on`).
///
/// The calls block their thread: the vault makes them on a dedicated thread, one at a time, so a
/// storage needs no lock of its own for the calls it answers. Reads and writes happen inside
/// ``withLock(exclusive:_:)``, which excludes other processes (and, for PostgreSQL, other nodes).
package protocol KeyVaultStorage: Sendable {
    /// Where the vault is, for messages (never with a password).
    var location: String { get }
    /// True when no other process had the vault open when this one opened it (crash recovery
    /// takes back an unfinished shredding mark only then). Shared storages answer false.
    var openedAlone: Bool { get }

    /// The 64-byte header (claim secret and vault id, FORMAT.md).
    func readHeader() throws -> [UInt8]
    /// Replaces the vault id of an older header that had none (bytes 48..<64), durably.
    func writeHeaderID(_ id: [UInt8]) throws
    /// Runs `body` holding the vault's lock against other processes, shared or exclusive.
    func withLock<T>(exclusive: Bool, _ body: () throws -> T) throws -> T
    /// The bytes of every slot from number `first` on, whole slots only; a slot never written reads
    /// as 128 zero bytes.
    func readSlots(from first: Int) throws -> [UInt8]
    /// The bytes of slot `number` (128 zero bytes when it was never written).
    func readSlot(_ number: Int) throws -> [UInt8]
    /// Writes consecutive slots starting at number `first` (their bytes, a multiple of 128),
    /// durably: when this returns (or, inside ``withLock(exclusive:_:)``, when the lock is let go)
    /// they survive a crash.
    func writeSlots(_ bytes: [UInt8], at first: Int) throws
    /// This process has stopped using the vault.
    func release()
}

/// The vault's layout constants, shared by every storage.
package enum KeyVaultLayout {
    /// Bytes of the header.
    package static let headerSize = 64
    /// Bytes of one slot.
    package static let slotSize = 128
}

/// A log backend that keeps the key vault beside its records (PostgreSQL: the `key_vault` and
/// `key_slots` tables in the log's schema, shared by every app server on the log) instead of a file
/// in the store's folder. The store asks the backend it was given for this capability; it never
/// casts the backend to a type.
package protocol KeyVaultHosting: AnyObject, Sendable {
    /// Where the vault is, for messages (never with a password).
    var hostedVaultDescription: String { get }
    /// What to do when the vault is missing.
    var hostedVaultRestoreHint: String { get }
    /// What to do when the vault is not the log's own.
    var hostedVaultPutBackHint: String { get }
    /// Whether the vault is there (nothing is created). Blocks its thread.
    ///
    /// - Throws: ``KeyVaultHostingError`` when that cannot be told.
    func hostedVaultExists() throws -> Bool
    /// The vault's storage, created with `header` when it is missing and `header` is given. Blocks
    /// its thread.
    ///
    /// - Throws: ``KeyVaultHostingError`` when the vault is missing (and not to be created) or
    ///   cannot be reached.
    func hostedVaultStorage(create header: [UInt8]?) throws -> any KeyVaultStorage
}

/// A vault hosted by the log's backend cannot be found or reached: the backend's own words.
package struct KeyVaultHostingError: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}
