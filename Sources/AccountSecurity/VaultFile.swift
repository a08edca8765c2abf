//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CChecksum
import Crypto
import Foundation
import KeyVaultStorage

/// The bytes of the key vault file and the system calls that read and write them. ``KeyVault``
/// decides what to write and when; this type knows only the layout, the locks and the I/O.
///
/// Layout, all integers big-endian:
/// - header, 64 bytes: `SPZVAULT`, `u32` version 1, `u32` slot size 128, 32 bytes of claim secret,
///   16 bytes of vault id (random at creation; zeros in vaults made before ids existed, which get
///   one the first time they are opened);
/// - slots of 128 bytes: `u8` state (1 live, 2 shredded, 3 shredding), `u8` account-id length,
///   2 bytes zero, `u32` CRC-32C of bytes 0–3 and 8–127, 32 bytes key (zeros once shredded), the
///   account id (UTF-8, at most 88 bytes, zero padded).
///
/// Several processes share the file. Slots are only ever appended at the end or rewritten in
/// place, each with one `pwrite` followed by `fdatasync`, under an exclusive `flock`; readers of
/// slots another process may be writing hold a shared one.
package struct VaultFile {
    package enum SlotState: UInt8 {
        case live = 1
        case shredded = 2
        case shredding = 3
    }

    /// One parsed slot.
    package struct Slot {
        var state: SlotState
        var accountId: String
        var key: SymmetricKey?
    }

    package static let headerSize = KeyVaultLayout.headerSize
    package static let slotSize = KeyVaultLayout.slotSize
    package static let maxAccountIdBytes = 88
    package static let magic = Array("SPZVAULT".utf8)
    package static let idRange = 48..<64

    package let path: String
    package let descriptor: Int32

    // MARK: Locks

    /// Runs `body` holding the file's `flock` (shared or exclusive); another process's lock makes
    /// it wait. The lock belongs to this open file, so two vaults open in one process exclude each other too.
    package func withLock<T>(exclusive: Bool, _ body: () throws -> T) throws -> T {
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw KeyVaultError.io(path: path, operation: "flock", errno: errno) }
        }
        defer { _ = flock(descriptor, LOCK_UN) }
        return try body()
    }

    // MARK: Reading

    /// The file's size in bytes.
    package func size() throws -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw KeyVaultError.io(path: path, operation: "stat", errno: errno) }
        return Int(status.st_size)
    }

    /// `count` bytes at `offset` (fewer at the end of the file).
    package func read(at offset: Int, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if got < 0 {
                if errno == EINTR { continue }
                throw KeyVaultError.io(path: path, operation: "read", errno: errno)
            }
            if got == 0 { break }
            done += got
        }
        return Array(bytes[0..<done])
    }

    /// The claim secret and vault id of a header, or an error saying why it is not one.
    package static func parseHeader(_ bytes: [UInt8], path: String) throws -> (secret: SymmetricKey, id: [UInt8]) {
        guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic else {
            throw KeyVaultError.notAVault(path: path, reason: "no SPZVAULT header")
        }
        guard uint32(bytes, at: 8) == 1, uint32(bytes, at: 12) == UInt32(slotSize) else {
            throw KeyVaultError.notAVault(path: path, reason: "unknown version or slot size")
        }
        return (SymmetricKey(data: bytes[16..<48]), Array(bytes[idRange]))
    }

    /// The slots in `bytes` (whole slots only), numbered from `first`. An all-zero slot was never
    /// written (nil); a slot whose checksum fails is damaged.
    package static func parseSlots(_ bytes: [UInt8], first: Int, path: String) throws -> [Slot?] {
        let count = bytes.count / slotSize
        return try (0..<count).map { index in
            let raw = Array(bytes[(index * slotSize)..<((index + 1) * slotSize)])
            return try parseSlot(raw, number: first + index, path: path)
        }
    }

    package static func parseSlot(_ raw: [UInt8], number: Int, path: String) throws -> Slot? {
        if raw.allSatisfy({ $0 == 0 }) { return nil }
        guard raw.count == slotSize, checksum(raw) == uint32(raw, at: 4), let state = SlotState(rawValue: raw[0]),
            Int(raw[1]) <= maxAccountIdBytes
        else {
            throw KeyVaultError.damagedSlot(path: path, slot: number)
        }
        let accountId = String(decoding: raw[40..<(40 + Int(raw[1]))], as: UTF8.self)
        return Slot(state: state, accountId: accountId, key: state == .shredded ? nil : SymmetricKey(data: raw[8..<40]))
    }

    /// The slot numbered `number`, read from the file now.
    package func readSlot(_ number: Int) throws -> Slot? {
        try Self.parseSlot(read(at: Self.headerSize + number * Self.slotSize, count: Self.slotSize), number: number, path: path)
    }

    // MARK: Writing

    /// Writes `bytes` at `offset` and flushes them before returning.
    package func write(_ bytes: [UInt8], at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw KeyVaultError.io(path: path, operation: "write", errno: errno)
            }
            guard written > 0 else { throw KeyVaultError.io(path: path, operation: "write", errno: EIO) }
            done += written
        }
        guard fdatasync(descriptor) == 0 else { throw KeyVaultError.io(path: path, operation: "fdatasync", errno: errno) }
    }

    package func write(slot number: Int, state: SlotState, key: [UInt8], accountId: [UInt8]) throws {
        try write(Self.slotBytes(state: state, key: key, accountId: accountId), at: Self.headerSize + number * Self.slotSize)
    }

    package static func slotBytes(state: SlotState, key: [UInt8], accountId: [UInt8]) -> [UInt8] {
        var bytes = [state.rawValue, UInt8(accountId.count), 0, 0, 0, 0, 0, 0] + key + accountId
        bytes += [UInt8](repeating: 0, count: slotSize - bytes.count)
        bytes.replaceSubrange(4..<8, with: bigEndian(checksum(bytes)))
        return bytes
    }

    /// A new header with a fresh claim secret and vault id.
    package static func newHeader() -> [UInt8] {
        var header = magic + bigEndian(UInt32(1)) + bigEndian(UInt32(slotSize))
        header += SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        header += SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        return header
    }

    /// Creates the vault file at `path` with a new header, atomically: it is written and flushed
    /// under a temporary name and linked into place, so a concurrent opener sees either no vault or
    /// a whole one. Returns false when another process created it first.
    package static func create(at path: String) throws -> Bool {
        let temporary = path + ".new-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeyVaultError.cannotOpen(path: temporary, errno: errno) }
        defer {
            close(fd)
            unlink(temporary)
        }
        try VaultFile(path: temporary, descriptor: fd).write(newHeader(), at: 0)
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw KeyVaultError.io(path: path, operation: "link", errno: errno)
        }
        // Make the new name itself durable.
        Self.syncFolder(URL(fileURLWithPath: path).deletingLastPathComponent())
        return true
    }

    /// Flushes a folder, so that a name made in it is durable.
    package static func syncFolder(_ folder: URL) {
        let fd = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    // MARK: Integers and checksums

    package static func checksum(_ slot: [UInt8]) -> UInt32 {
        let covered = Array(slot[0..<4]) + Array(slot[8..<slotSize])
        return covered.withUnsafeBytes { cchecksum_crc32c(0, $0.baseAddress, $0.count) }
    }

    package static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    package static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
