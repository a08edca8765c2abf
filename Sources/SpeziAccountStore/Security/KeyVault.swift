//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CChecksum
import Crypto
import Foundation
import Synchronization

/// Errors of the key vault.
public enum KeyVaultError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotOpen(path: String, errno: Int32)
    case notAVault(path: String, reason: String)
    case damagedSlot(path: String, slot: Int)
    case io(path: String, operation: String, errno: Int32)
    case accountIdTooLong(String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .cannotOpen(path, code): "cannot open the key vault \(path): \(String(cString: strerror(code)))"
        case let .notAVault(path, reason): "\(path) is not a key vault: \(reason)"
        case let .damagedSlot(path, slot): "key vault \(path): slot \(slot) fails its checksum"
        case let .io(path, operation, code): "key vault \(path): \(operation) failed: \(String(cString: strerror(code)))"
        case let .accountIdTooLong(id): "account id \"\(id.prefix(40))…\" is longer than the vault's 88 bytes"
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
/// The vault is a plain file (not LMDB: LMDB copies pages on write, so an overwritten key would
/// live on in a free page). Layout, all integers big-endian:
/// - header, 64 bytes: `SPZVAULT`, `u32` version 1, `u32` slot size 128, 32 bytes of claim secret
///   (keys user-id claims, so no e-mail address is stored in the clear), 16 bytes zero;
/// - slots of 128 bytes: `u8` state (1 live, 2 shredded, 3 shredding), `u8` account-id length,
///   2 bytes zero, `u32` CRC-32C of bytes 0–3 and 8–127, 32 bytes key (zeros once shredded), the
///   account id (UTF-8, at most 88 bytes, zero padded).
///
/// Every change is written with `pwrite` and flushed with `fdatasync` before it is used, in every
/// sync mode: a lost key would make an account unreadable for good.
public final class KeyVault: Sendable {
    enum SlotState: UInt8 {
        case live = 1
        case shredded = 2
        case shredding = 3
    }

    struct Entry {
        var slot: Int
        var state: SlotState
        var key: SymmetricKey?
    }

    static let headerSize = 64
    static let slotSize = 128
    static let maxAccountIdBytes = 88

    /// The path of the vault file.
    public let path: String
    let descriptor: Int32
    /// The secret that keys user-id claims (HMAC-SHA256).
    let claimSecret: SymmetricKey
    private let entries: Mutex<(byAccount: [String: Entry], slotCount: Int)>

    /// Opens the vault at `path`, creating it (with a new claim secret) when missing.
    public init(path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeyVaultError.cannotOpen(path: path, errno: errno) }
        descriptor = fd
        do {
            let contents = try Self.readAll(fd, path: path)
            if contents.isEmpty {
                var header = Array("SPZVAULT".utf8) + Self.bigEndian(UInt32(1)) + Self.bigEndian(UInt32(Self.slotSize))
                let secret = SymmetricKey(size: .bits256)
                header += secret.withUnsafeBytes { Array($0) } + [UInt8](repeating: 0, count: 16)
                try Self.write(header, at: 0, fd: fd, path: path)
                claimSecret = secret
                entries = Mutex(([:], 0))
            } else {
                let (secret, byAccount, count) = try Self.parse(contents, path: path)
                claimSecret = secret
                entries = Mutex((byAccount, count))
            }
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(descriptor) }

    /// The account's key, or nil when it has none or it was shredded.
    public func key(for accountId: String) -> SymmetricKey? {
        entries.withLock { $0.byAccount[accountId]?.key }
    }

    /// Whether the account's key was destroyed (or is being destroyed).
    public func isShredded(_ accountId: String) -> Bool {
        entries.withLock { ($0.byAccount[accountId]?.state ?? .live) != .live }
    }

    /// The account's key, created (and flushed) when it has none yet.
    public func makeKey(for accountId: String) throws -> SymmetricKey {
        let id = Array(accountId.utf8)
        guard id.count <= Self.maxAccountIdBytes else { throw KeyVaultError.accountIdTooLong(accountId) }
        return try entries.withLock { entries in
            if let existing = entries.byAccount[accountId]?.key { return existing }
            let key = SymmetricKey(size: .bits256)
            let slot = entries.slotCount
            try write(slot: slot, state: .live, key: key.withUnsafeBytes { Array($0) }, accountId: id)
            entries.slotCount += 1
            entries.byAccount[accountId] = Entry(slot: slot, state: .live, key: key)
            return key
        }
    }

    /// Keys for many new accounts at once, written with one flush (bulk imports, benchmarks).
    public func makeKeys(for accountIds: [String]) throws {
        for accountId in accountIds where accountId.utf8.count > Self.maxAccountIdBytes { throw KeyVaultError.accountIdTooLong(accountId) }
        try entries.withLock { entries in
            var bytes: [UInt8] = []
            var added: [(String, Entry)] = []
            var seen: Set<String> = []
            for accountId in accountIds where entries.byAccount[accountId] == nil && seen.insert(accountId).inserted {
                let key = SymmetricKey(size: .bits256)
                bytes += Self.slot(state: .live, key: key.withUnsafeBytes { Array($0) }, accountId: Array(accountId.utf8))
                added.append((accountId, Entry(slot: entries.slotCount + added.count, state: .live, key: key)))
            }
            guard !added.isEmpty else { return }
            try Self.write(bytes, at: Self.headerSize + entries.slotCount * Self.slotSize, fd: descriptor, path: path)
            entries.slotCount += added.count
            for (accountId, entry) in added { entries.byAccount[accountId] = entry }
        }
    }

    /// Marks the key as about to be destroyed (before the deletion is appended), so that a crash in
    /// between is finished at the next open by ``finishShredding(isDeleted:)``.
    func markShredding(_ accountId: String) throws {
        try entries.withLock { entries in
            guard var entry = entries.byAccount[accountId], entry.state == .live, let key = entry.key else { return }
            try write(slot: entry.slot, state: .shredding, key: key.withUnsafeBytes { Array($0) }, accountId: Array(accountId.utf8))
            entry.state = .shredding
            entries.byAccount[accountId] = entry
        }
    }

    /// Overwrites the account's key with zeros and flushes it.
    public func shred(_ accountId: String) throws {
        try entries.withLock { entries in
            guard var entry = entries.byAccount[accountId], entry.state != .shredded else { return }
            try write(slot: entry.slot, state: .shredded, key: [UInt8](repeating: 0, count: 32), accountId: Array(accountId.utf8))
            entry.state = .shredded
            entry.key = nil
            entries.byAccount[accountId] = entry
        }
    }

    /// Takes back a mark of ``markShredding(_:)`` (the deletion was not appended).
    func cancelShredding(_ accountId: String) throws {
        try entries.withLock { entries in
            guard var entry = entries.byAccount[accountId], entry.state == .shredding, let key = entry.key else { return }
            try write(slot: entry.slot, state: .live, key: key.withUnsafeBytes { Array($0) }, accountId: Array(accountId.utf8))
            entry.state = .live
            entries.byAccount[accountId] = entry
        }
    }

    /// After a crash: keys marked for shredding are destroyed when the deletion reached the log,
    /// and kept (marked live again) when it did not. Returns the accounts shredded.
    @discardableResult
    func finishShredding(isDeleted: (String) throws -> Bool) throws -> [String] {
        let pending = entries.withLock { $0.byAccount.filter { $0.value.state == .shredding }.map(\.key) }
        var shredded: [String] = []
        for accountId in pending {
            if try isDeleted(accountId) {
                try shred(accountId)
                shredded.append(accountId)
            } else {
                try cancelShredding(accountId)
            }
        }
        return shredded
    }

    /// The number of accounts with a key slot (live or shredded).
    public var count: Int { entries.withLock { $0.byAccount.count } }

    // MARK: File access

    private func write(slot: Int, state: SlotState, key: [UInt8], accountId: [UInt8]) throws {
        try Self.write(
            Self.slot(state: state, key: key, accountId: accountId), at: Self.headerSize + slot * Self.slotSize, fd: descriptor, path: path)
    }

    static func slot(state: SlotState, key: [UInt8], accountId: [UInt8]) -> [UInt8] {
        var bytes = [state.rawValue, UInt8(accountId.count), 0, 0, 0, 0, 0, 0] + key + accountId
        bytes += [UInt8](repeating: 0, count: slotSize - bytes.count)
        bytes.replaceSubrange(4..<8, with: bigEndian(checksum(bytes)))
        return bytes
    }

    static func checksum(_ slot: [UInt8]) -> UInt32 {
        let covered = Array(slot[0..<4]) + Array(slot[8..<slotSize])
        return covered.withUnsafeBytes { cchecksum_crc32c(0, $0.baseAddress, $0.count) }
    }

    static func write(_ bytes: [UInt8], at offset: Int, fd: Int32, path: String) throws {
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else { throw KeyVaultError.io(path: path, operation: "write", errno: written < 0 ? errno : EIO) }
        guard fdatasync(fd) == 0 else { throw KeyVaultError.io(path: path, operation: "fdatasync", errno: errno) }
    }

    static func readAll(_ fd: Int32, path: String) throws -> [UInt8] {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw KeyVaultError.io(path: path, operation: "stat", errno: errno) }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard read == bytes.count else { throw KeyVaultError.io(path: path, operation: "read", errno: read < 0 ? errno : EIO) }
        return bytes
    }

    static func parse(_ bytes: [UInt8], path: String) throws -> (SymmetricKey, [String: Entry], Int) {
        guard bytes.count >= headerSize, Array(bytes[0..<8]) == Array("SPZVAULT".utf8) else {
            throw KeyVaultError.notAVault(path: path, reason: "no SPZVAULT header")
        }
        guard uint32(bytes, at: 8) == 1, uint32(bytes, at: 12) == UInt32(slotSize) else {
            throw KeyVaultError.notAVault(path: path, reason: "unknown version or slot size")
        }
        let secret = SymmetricKey(data: bytes[16..<48])
        // A slot cut short by a crash during its first write was never used: ignore it.
        let count = (bytes.count - headerSize) / slotSize
        var byAccount: [String: Entry] = [:]
        for slot in 0..<count {
            let start = headerSize + slot * slotSize
            let raw = Array(bytes[start..<(start + slotSize)])
            if raw.allSatisfy({ $0 == 0 }) { continue }
            guard checksum(raw) == uint32(raw, at: 4), let state = SlotState(rawValue: raw[0]), Int(raw[1]) <= maxAccountIdBytes else {
                throw KeyVaultError.damagedSlot(path: path, slot: slot)
            }
            let accountId = String(decoding: raw[40..<(40 + Int(raw[1]))], as: UTF8.self)
            let key = state == .shredded ? nil : SymmetricKey(data: raw[8..<40])
            byAccount[accountId] = Entry(slot: slot, state: state, key: key)
        }
        return (secret, byAccount, count)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
