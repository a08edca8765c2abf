//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import KeyVaultStorage

/// The key vault in a file beside an LMDB store (`keys/vault`, layout in FORMAT.md).
///
/// Every open vault holds a shared `flock` on `vault.users`; taking it exclusively first tells
/// whether another process has the vault open. Reads and writes go through ``VaultFile``: slots
/// are appended or rewritten in place, each write flushed with `fdatasync` before it returns.
// Unchecked Sendable: its properties never change after init; `VaultFile` takes the vault's lock for every read and write.
package final class FileVaultStorage: KeyVaultStorage, @unchecked Sendable {
    package let file: VaultFile
    package let openedAlone: Bool
    private let usersDescriptor: Int32

    package var location: String { file.path }

    /// Opens the vault file at `path`, creating it (with a new claim secret and id) when it is
    /// missing and `create` is true.
    package init(path: String, create: Bool) throws {
        let fileManager = FileManager.default
        if !fileManager.fileExists(atPath: path) {
            guard create else { throw KeyVaultError.missing(path: path) }
            try fileManager.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = try VaultFile.create(at: path)
        }
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw KeyVaultError.cannotOpen(path: path, errno: errno) }
        let users = open(path + ".users", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard users >= 0 else {
            let code = errno
            close(fd)
            throw KeyVaultError.cannotOpen(path: path + ".users", errno: code)
        }
        openedAlone = flock(users, LOCK_EX | LOCK_NB) == 0
        _ = flock(users, LOCK_SH)
        usersDescriptor = users
        file = VaultFile(path: path, descriptor: fd)
    }

    deinit {
        close(file.descriptor)
        close(usersDescriptor)
    }

    package func readHeader() throws -> [UInt8] {
        try file.read(at: 0, count: VaultFile.headerSize)
    }

    package func writeHeaderID(_ id: [UInt8]) throws {
        try file.write(id, at: VaultFile.idRange.lowerBound)
    }

    package func withLock<T>(exclusive: Bool, _ body: () throws -> T) throws -> T {
        try file.withLock(exclusive: exclusive, body)
    }

    package func readSlots(from first: Int) throws -> [UInt8] {
        let start = VaultFile.headerSize + first * VaultFile.slotSize
        // A slot cut short by a crash during its first write was never used: it is not counted.
        let whole = max(try file.size() - start, 0) / VaultFile.slotSize
        guard whole > 0 else { return [] }
        return try file.read(at: start, count: whole * VaultFile.slotSize)
    }

    package func readSlot(_ number: Int) throws -> [UInt8] {
        let bytes = try file.read(at: VaultFile.headerSize + number * VaultFile.slotSize, count: VaultFile.slotSize)
        return bytes.count == VaultFile.slotSize ? bytes : [UInt8](repeating: 0, count: VaultFile.slotSize)
    }

    package func writeSlots(_ bytes: [UInt8], at first: Int) throws {
        try file.write(bytes, at: VaultFile.headerSize + first * VaultFile.slotSize)
    }

    package func release() {
        _ = flock(usersDescriptor, LOCK_UN)
    }
}
