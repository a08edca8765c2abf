//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

internal import BlockingPool
import Crypto
import Foundation
import KeyVaultStorage
import Synchronization

/// Errors of the key vault.
public enum KeyVaultError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotOpen(path: String, errno: Int32)
    case notAVault(path: String, reason: String)
    case damagedSlot(path: String, slot: Int)
    case io(path: String, operation: String, errno: Int32)
    case accountIdTooLong(String)
    /// There is no vault file at the path (and none was to be created).
    case missing(path: String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .cannotOpen(path, code): "cannot open the key vault \(path): \(String(cString: strerror(code)))"
        case let .notAVault(path, reason): "\(path) is not a key vault: \(reason)"
        case let .damagedSlot(path, slot): "key vault \(path): slot \(slot) fails its checksum"
        case let .io(path, operation, code): "key vault \(path): \(operation) failed: \(String(cString: strerror(code)))"
        case let .accountIdTooLong(id): "account id \"\(id.prefix(40))…\" is longer than the vault's 88 bytes"
        case let .missing(path): "there is no key vault at \(path)"
        }
    }
}

/// The per-account data keys that make deletion final (crypto-shredding).
///
/// Every account gets a random 256-bit key when it is created; its personal data in the log and in
/// the projections is sealed with it (ChaCha20-Poly1305). Deleting the account overwrites the key
/// in place with zeros and flushes it: the log stays append-only and its hash chain verifies, but
/// nobody can read the deleted person's details any more.
///
/// The vault keeps its bytes in a `KeyVaultStorage`: a plain file beside an LMDB store (not LMDB:
/// LMDB copies pages on write, so an overwritten key would live on in a free page), or tables beside
/// a PostgreSQL log that every app server shares; the layout is described in FORMAT.md. Every
/// change is durable before it is used, in every sync mode: a lost key would make an account
/// unreadable for good.
///
/// Any number of processes may open one vault. New slots are allocated at the end under the
/// storage's exclusive lock, after re-reading the slots other processes added; a key this process
/// does not know yet is looked up in the storage before an account is taken to have none; and
/// every state change re-reads its slot under the lock first. Keys already known are answered
/// from memory under a lock of their own, never held across storage access, so a flush holds up
/// only other writers.
public final class KeyVault: Sendable {
    package typealias SlotState = VaultFile.SlotState

    package struct Entry {
        var slot: Int
        var state: SlotState
        var key: SymmetricKey?
    }

    package struct Cache {
        var byAccount: [String: Entry] = [:]
        /// Slots read from the file so far (the file may have more, added by other processes).
        var slotCount = 0
    }

    package static let headerSize = VaultFile.headerSize
    package static let slotSize = VaultFile.slotSize
    package static let maxAccountIdBytes = VaultFile.maxAccountIdBytes

    /// Where the vault is: the path of the vault file, or the PostgreSQL location of its tables.
    public let path: String
    /// The vault's identity: 16 random bytes in hex, given at creation.
    public let id: String
    /// A fingerprint of the claim secret (hex of an HMAC-SHA256 under it): tells two vaults apart
    /// without revealing the secret.
    public let fingerprint: String
    /// True when no other process had the vault open when this one opened it.
    package var openedAlone: Bool { storage.openedAlone }
    package let storage: any KeyVaultStorage
    /// The secret that keys user-id claims (HMAC-SHA256).
    package let claimSecret: SymmetricKey
    private let cache: Mutex<Cache>
    /// Held while this process uses the storage (see `withFile`).
    private let fileAccess = Mutex(())

    /// Opens the vault file at `path`. A missing vault is created (with a new claim secret and id)
    /// when `create` is true, and refused with ``KeyVaultError/missing(path:)`` otherwise.
    ///
    /// - Parameters:
    ///   - path: The vault file.
    ///   - create: Whether to create the file when there is none.
    /// - Throws: ``KeyVaultError/missing(path:)`` when there is no file and `create` is false;
    ///   ``KeyVaultError/cannotOpen(path:errno:)`` when it cannot be opened or created;
    ///   ``KeyVaultError/notAVault(path:reason:)`` when the file is not a key vault;
    ///   ``KeyVaultError/io(path:operation:errno:)`` when reading or locking it fails.
    public convenience init(path: String, create: Bool = true) throws {
        try self.init(storage: FileVaultStorage(path: path, create: create))
    }

    /// Opens the vault kept in `storage` (a file, or PostgreSQL tables shared by every node).
    package init(storage: any KeyVaultStorage) throws {
        self.storage = storage
        path = storage.location
        let (secret, id) = try Self.header(of: storage)
        claimSecret = secret
        self.id = id.hexString
        let mac = HMAC<SHA256>.authenticationCode(for: Array("spezi-account-store vault fingerprint".utf8), using: secret)
        fingerprint = mac.prefix(16).hexString
        var fresh = Cache()
        try storage.withLock(exclusive: false) { try Self.readNewSlots(storage, into: &fresh) }
        cache = Mutex(fresh)
    }

    /// Says that this process has stopped using the vault (the store closed): a vault opened after
    /// this, in this process or another, may count as opened alone. The storage stays open until
    /// the vault is released from memory.
    public func release() {
        storage.release()
    }

    /// Reads the header; a vault made before vault ids existed gets one now.
    private static func header(of storage: any KeyVaultStorage) throws -> (SymmetricKey, [UInt8]) {
        let parsed = try VaultFile.parseHeader(try storage.readHeader(), path: storage.location)
        if parsed.id.contains(where: { $0 != 0 }) { return parsed }
        return try storage.withLock(exclusive: true) {
            let again = try VaultFile.parseHeader(try storage.readHeader(), path: storage.location)
            if again.id.contains(where: { $0 != 0 }) { return again }
            let id = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
            try storage.writeHeaderID(id)
            return (again.secret, id)
        }
    }

    /// Adds the slots written since the cache last looked (by this process or another).
    private static func readNewSlots(_ storage: any KeyVaultStorage, into cache: inout Cache) throws {
        let bytes = try storage.readSlots(from: cache.slotCount)
        guard bytes.count >= VaultFile.slotSize else { return }
        for (offset, slot) in try VaultFile.parseSlots(bytes, first: cache.slotCount, path: storage.location).enumerated() {
            guard let slot else { continue }
            cache.byAccount[slot.accountId] = Entry(slot: cache.slotCount + offset, state: slot.state, key: slot.key)
        }
        cache.slotCount += bytes.count / VaultFile.slotSize
    }

    /// Runs `body` holding the file: the in-process lock first (threads of this process share one
    /// open file, and so one `flock`), then the `flock` that excludes other processes.
    private func withFile<T: Sendable>(exclusive: Bool, _ body: () throws -> T) throws -> T {
        try fileAccess.withLock { _ in try storage.withLock(exclusive: exclusive, body) }
    }

    /// Adds the slots written since the cache last looked (by this process or another); call it
    /// holding the file. The cache's own lock is taken only to merge, never across file access.
    private func refresh() throws {
        let known = cache.withLock { $0.slotCount }
        var fresh = Cache(byAccount: [:], slotCount: known)
        try Self.readNewSlots(storage, into: &fresh)
        guard fresh.slotCount > known else { return }
        cache.withLock { cache in
            cache.byAccount.merge(fresh.byAccount) { _, new in new }
            cache.slotCount = fresh.slotCount
        }
    }

    /// The account's entry from the cache, or else from slots other processes added.
    private func entry(_ accountId: String) throws -> Entry? {
        if let entry = cache.withLock({ $0.byAccount[accountId] }) { return entry }
        try withFile(exclusive: false) { try refresh() }
        return cache.withLock { $0.byAccount[accountId] }
    }

    /// Re-reads the account's slot from the file (another process may have changed it); call it
    /// holding the file exclusively.
    private func currentEntry(_ accountId: String) throws -> Entry? {
        if cache.withLock({ $0.byAccount[accountId] }) == nil { try refresh() }
        guard var entry = cache.withLock({ $0.byAccount[accountId] }) else { return nil }
        guard let slot = try VaultFile.parseSlot(try storage.readSlot(entry.slot), number: entry.slot, path: path), slot.accountId == accountId
        else {
            throw KeyVaultError.damagedSlot(path: path, slot: entry.slot)
        }
        entry.state = slot.state
        entry.key = slot.key
        cache.withLock { [entry] in $0.byAccount[accountId] = entry }
        return entry
    }

    /// The account's key, or nil when it has none or it was shredded.
    ///
    /// - Parameter accountId: The account whose key to look up.
    /// - Returns: The live key, or nil when the account has no slot or its key was destroyed.
    /// - Throws: ``KeyVaultError`` when new slots cannot be read from the vault's storage.
    public func key(for accountId: String) throws -> SymmetricKey? {
        try entry(accountId)?.key
    }

    /// Whether the vault has a slot for the account (a live or a destroyed key).
    ///
    /// - Parameter accountId: The account to look up.
    /// - Returns: True when a slot names the account, whatever the state of its key.
    /// - Throws: ``KeyVaultError`` when new slots cannot be read from the vault's storage.
    public func hasSlot(_ accountId: String) throws -> Bool {
        try entry(accountId) != nil
    }

    /// Whether the account's key was destroyed (or is being destroyed).
    ///
    /// - Parameter accountId: The account to look up; its slot is read again from the storage.
    /// - Returns: True when the key is destroyed or marked for destruction; false for a live key or an
    ///   account without a slot.
    /// - Throws: ``KeyVaultError/damagedSlot(path:slot:)`` when the slot fails its checks, or another
    ///   ``KeyVaultError`` when the storage cannot be locked or read.
    public func isShredded(_ accountId: String) throws -> Bool {
        try withFile(exclusive: true) { (try currentEntry(accountId)?.state ?? .live) != .live }
    }

    /// The account's key if this process has seen it already (no file access), or nil.
    package func knownKey(for accountId: String) -> SymmetricKey? {
        cache.withLock { $0.byAccount[accountId]?.key }
    }

    /// Runs a vault call that may write and flush the file on the vault's own thread, so that the
    /// flush never holds a thread of Swift's cooperative pool.
    package func offPool<T: Sendable>(_ body: @escaping @Sendable (KeyVault) throws -> T) async throws -> T {
        try await BlockingPool.vault.run { [self] in try body(self) }
    }

    /// The account's key, created (and flushed) when it has none yet. Readers of other keys are
    /// not held up by the flush.
    ///
    /// - Parameter accountId: The account whose key to return or make.
    /// - Returns: The account's key: the existing one, or a new random 256-bit key, durable on return.
    /// - Throws: ``KeyVaultError/accountIdTooLong(_:)`` for an account id longer than a slot holds;
    ///   ``KeyVaultError/notAVault(path:reason:)`` when the account's key was destroyed already; or a
    ///   ``KeyVaultError`` when the storage cannot be locked, read or written.
    public func makeKey(for accountId: String) throws -> SymmetricKey {
        let id = Array(accountId.utf8)
        guard id.count <= Self.maxAccountIdBytes else { throw KeyVaultError.accountIdTooLong(accountId) }
        if let existing = knownKey(for: accountId) { return existing }
        let (key, written) = try withFile(exclusive: true) { () throws -> (SymmetricKey, Int?) in
            try refresh()
            if let existing = cache.withLock({ $0.byAccount[accountId] }) {
                guard let key = existing.key else { throw KeyVaultError.notAVault(path: path, reason: "the key of \(accountId) was destroyed") }
                return (key, nil)
            }
            let key = SymmetricKey(size: .bits256)
            let slot = cache.withLock { $0.slotCount }
            try storage.writeSlots(VaultFile.slotBytes(state: .live, key: key.withUnsafeBytes { Array($0) }, accountId: id), at: slot)
            return (key, slot)
        }
        // Cached only once the write is durable (a storage that commits does so when the lock
        // ends): a slot whose commit failed must not count as this account's, nor move the count
        // past a slot number another process may take (it would never read that slot).
        if let written { remember([(accountId, Entry(slot: written, state: .live, key: key))]) }
        return key
    }

    /// Adds slots this process wrote to the cache.
    private func remember(_ written: [(String, Entry)]) {
        cache.withLock { cache in
            for (accountId, entry) in written {
                cache.slotCount = max(cache.slotCount, entry.slot + 1)
                cache.byAccount[accountId] = entry
            }
        }
    }

    /// Keys for many new accounts at once, written with one flush (bulk imports, benchmarks).
    ///
    /// - Parameter accountIds: The accounts; those with a slot already, and repeats, are skipped.
    /// - Throws: ``KeyVaultError/accountIdTooLong(_:)`` before anything is written when an account id
    ///   is longer than a slot holds, or a ``KeyVaultError`` when the storage cannot be locked, read or
    ///   written.
    public func makeKeys(for accountIds: [String]) throws {
        for accountId in accountIds where accountId.utf8.count > Self.maxAccountIdBytes { throw KeyVaultError.accountIdTooLong(accountId) }
        let added = try withFile(exclusive: true) { () throws -> [(String, Entry)] in
            try refresh()
            let (known, first) = cache.withLock { (Set($0.byAccount.keys), $0.slotCount) }
            var bytes: [UInt8] = []
            var added: [(String, Entry)] = []
            var seen: Set<String> = []
            for accountId in accountIds where !known.contains(accountId) && seen.insert(accountId).inserted {
                let key = SymmetricKey(size: .bits256)
                bytes += VaultFile.slotBytes(state: .live, key: key.withUnsafeBytes { Array($0) }, accountId: Array(accountId.utf8))
                added.append((accountId, Entry(slot: first + added.count, state: .live, key: key)))
            }
            guard !added.isEmpty else { return [] }
            try storage.writeSlots(bytes, at: first)
            return added
        }
        remember(added)
    }

    /// Marks the key as about to be destroyed (before the deletion is appended), so that a crash in
    /// between is finished at the next open by ``finishShredding(isDeleted:)``.
    package func markShredding(_ accountId: String) throws {
        try change(accountId, from: [.live], to: .shredding)
    }

    /// Overwrites the account's key with zeros and flushes it. Idempotent, and cheap when this
    /// process already knows the key is gone (replays call it for every deletion they meet).
    ///
    /// - Parameter accountId: The account whose key to destroy; nothing happens when it has no slot.
    /// - Throws: ``KeyVaultError/damagedSlot(path:slot:)`` when the slot fails its checks, or another
    ///   ``KeyVaultError`` when the storage cannot be locked, read or written.
    public func shred(_ accountId: String) throws {
        if cache.withLock({ $0.byAccount[accountId]?.state == .shredded }) { return }
        try change(accountId, from: [.live, .shredding], to: .shredded)
    }

    /// Takes back a mark of ``markShredding(_:)`` (the deletion was not appended).
    package func cancelShredding(_ accountId: String) throws {
        try change(accountId, from: [.shredding], to: .live)
    }

    /// Moves the account's slot from one of `states` (as the file holds it now) to `state`.
    private func change(_ accountId: String, from states: Set<SlotState>, to state: SlotState) throws {
        let changed = try withFile(exclusive: true) { () throws -> Entry? in
            guard var entry = try currentEntry(accountId), states.contains(entry.state) else { return nil }
            let key = state == .shredded ? [UInt8](repeating: 0, count: 32) : entry.key.map { $0.withUnsafeBytes { Array($0) } }
            guard let key else { return nil }
            try storage.writeSlots(VaultFile.slotBytes(state: state, key: key, accountId: Array(accountId.utf8)), at: entry.slot)
            entry.state = state
            entry.key = state == .shredded ? nil : entry.key
            return entry
        }
        // Cached once durable, as in makeKey(for:).
        if let changed { remember([(accountId, changed)]) }
    }

    /// After a crash: keys marked for shredding are destroyed when the deletion reached the log. A
    /// mark whose deletion did not reach the log is taken back (the key made live again) only when
    /// this process opened the vault alone: with others running, one of them may be between its
    /// mark and its append, and the mark stays (harmless: the key still reads, and a later deletion
    /// destroys it). `deletions` says, for each account ``pendingShreds()`` listed, whether its
    /// deletion is in the log. Returns the accounts shredded.
    @discardableResult
    package func finishShredding(_ deletions: [String: Bool]) throws -> [String] {
        var shredded: [String] = []
        for (accountId, isDeleted) in deletions.sorted(by: { $0.key < $1.key }) {
            if isDeleted {
                try shred(accountId)
                shredded.append(accountId)
            } else if openedAlone {
                try cancelShredding(accountId)
            }
        }
        return shredded
    }

    /// The accounts marked for shredding (read again from the file): their deletions may not have
    /// reached the log. ``finishShredding(_:)`` settles them.
    package func pendingShreds() throws -> [String] {
        try withFile(exclusive: false) { try refresh() }
        return cache.withLock { $0.byAccount.filter { $0.value.state == .shredding }.map(\.key) }
    }

    /// The number of accounts with a key slot (live or shredded), as far as this process has read.
    public var count: Int { cache.withLock { $0.byAccount.count } }

    /// Copies the vault to `destination` (a new vault file, whatever the vault's own storage)
    /// while holding its lock, so that no slot is copied half-written; the copy is flushed before
    /// this returns.
    ///
    /// - Parameter destination: The path of the copy; no file may exist there yet.
    /// - Throws: ``KeyVaultError/cannotOpen(path:errno:)`` when the file cannot be created (one
    ///   exists already, say), or a ``KeyVaultError`` when reading the vault or writing the copy fails.
    public func copy(to destination: String) throws {
        try withFile(exclusive: false) {
            let bytes = try storage.readHeader() + storage.readSlots(from: 0)
            let fd = open(destination, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw KeyVaultError.cannotOpen(path: destination, errno: errno) }
            defer { close(fd) }
            try VaultFile(path: destination, descriptor: fd).write(bytes, at: 0)
        }
    }

    // The layout helpers some tests and the details projection use.

    package static func bigEndian(_ value: UInt32) -> [UInt8] { VaultFile.bigEndian(value) }
    package static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 { VaultFile.uint32(bytes, at: offset) }
}
