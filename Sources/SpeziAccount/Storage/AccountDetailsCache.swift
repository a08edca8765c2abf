//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import Spezi

/// A rebuildable store of account details that an ``AccountDetailsCache`` reads through: the
/// account store's details cache, a projection of its log, is one (`AccountStore` conforms).
public protocol AccountDetailsCacheSource: Sendable {
    /// The account's current details, or nil when the source has none.
    ///
    /// - Parameter accountId: the account.
    /// - Returns: its details, or nil when the source has none (an unknown or deleted account).
    /// - Throws: the source's error when it cannot be read.
    func cachedDetails(of accountId: String) throws -> AccountDetails?
    /// Drops the source's state and builds it again (from the log, for the account store).
    ///
    /// - Throws: the source's error when the rebuild fails; the old state then keeps answering.
    func rebuildCache() async throws
}

/// Caches AccountDetails per account in memory, in front of one JSON file per account or of a
/// rebuildable source (the account store's details projection).
///
/// Storage providers use it to answer `load` at once. Entries are cleared on disassociation.
// Unchecked Sendable: its entries are held in a `SpeziLock`; the settings never change.
public final class AccountDetailsCache: Module, DefaultInitializable, @unchecked Sendable {
    private let memory = SpeziLock<[String: AccountDetails]>([:])
    private static let logger = Logger(label: "SpeziAccount.AccountDetailsCache")
    /// The directory of the on-disk copies, if any.
    public let directory: URL?
    /// The source read after the memory layer, if any.
    public let source: (any AccountDetailsCacheSource)?

    /// A cache on disk, as the seeds describe it: unencrypted files in
    /// ``LocalStorageSetting/defaultDirectory``, behind the memory layer.
    public convenience init() {
        self.init(settings: .unencrypted(excludeFromBackup: true))
    }

    /// A cache with upstream's storage setting: `.unencrypted` writes files to
    /// ``LocalStorageSetting/defaultDirectory``; the encrypted settings keep the details in memory
    /// only on Linux (there is no keychain to hold a key).
    ///
    /// - Parameter settings: how to store the copies.
    public convenience init(settings: LocalStorageSetting) {
        self.init(directory: settings.storesOnDisk ? LocalStorageSetting.defaultDirectory : nil)
    }

    /// A memory-only cache.
    ///
    /// - Returns: a cache that never writes to disk.
    public static func memoryOnly() -> AccountDetailsCache {
        AccountDetailsCache(directory: nil)
    }

    /// A cache that also writes to `directory` (created if needed).
    ///
    /// - Parameter directory: the folder of the JSON copies, or nil for a memory-only cache.
    public init(directory: URL?) {
        self.directory = directory
        self.source = nil
    }

    /// A cache in front of `source`: `loadEntry` answers from memory, else from the source;
    /// ``purgeDisk()`` rebuilds the source. With the account store as the source, the seed's cache
    /// API reads the details projection, and "rebuild the AccountDetails cache" replays the log.
    ///
    /// - Parameter source: the store read on a memory miss and rebuilt by ``purgeDisk()``.
    public init(source: any AccountDetailsCacheSource) {
        self.directory = nil
        self.source = source
    }

    private func fileURL(for accountId: String) -> URL? {
        let safe = accountId.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? accountId
        return directory?.appendingPathComponent("\(safe).json")
    }

    /// The cached details of the given keys: from memory, else from disk (then kept in memory); `nil` when absent.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - keys: the keys to answer for.
    /// - Returns: the cached values of those keys, or nil when the account has no entry (or the source
    ///   cannot be read, which is logged).
    public func loadEntry(for accountId: String, _ keys: [any AccountKey.Type]) -> AccountDetails? {
        if let details = memory.current[accountId] {
            return details.filtered(to: keys)
        }
        if let source {
            do {
                return try source.cachedDetails(of: accountId)?.filtered(to: keys)
            } catch {
                Self.logger.error("cannot read the cached details", metadata: ["account": "\(accountId)", "error": "\(error)"])
                return nil
            }
        }
        guard let url = fileURL(for: accountId), let data = try? Data(contentsOf: url),
            let details = try? AccountDetails.decode(from: data, keys: keys)
        else {
            return nil
        }
        memory.withLock { $0[accountId] = details }
        return details.filtered(to: keys)
    }

    /// Applies a modification to the cached entry.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - modifications: the values to set and to remove.
    public func communicateModifications(for accountId: String, _ modifications: AccountModifications) {
        let details = memory.withLock { cache in
            let updated = modifications.applied(to: cache[accountId] ?? AccountDetails())
            cache[accountId] = updated
            return updated
        }
        persist(details, for: accountId)
    }

    /// Replaces the cached entry with details received from a remote.
    ///
    /// - Parameters:
    ///   - accountId: the account.
    ///   - details: its details as the remote has them.
    public func communicateRemoteChanges(for accountId: String, _ details: AccountDetails) {
        memory.withLock { $0[accountId] = details }
        persist(details, for: accountId)
    }

    /// Removes the entry from memory and disk.
    ///
    /// - Parameter accountId: the account.
    public func clearEntry(for accountId: String) {
        memory.withLock { $0[accountId] = nil }
        if let url = fileURL(for: accountId) {
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// Empties the memory cache (disk copies stay).
    public func purgeMemoryCache() {
        memory.withLock { $0.removeAll() }
    }

    /// Drops one account's entry from memory; its disk copy stays and answers the next
    /// ``loadEntry(for:_:)``.
    ///
    /// - Parameter accountId: the account.
    public func purgeMemoryCache(for accountId: String) {
        memory.withLock { $0[accountId] = nil }
    }

    /// Empties the cache below the memory layer, and the memory layer too: the disk copies are
    /// deleted, or the source is rebuilt (for the account store: its details projection is
    /// replayed from the log, blue/green, while the old one keeps answering).
    ///
    /// - Throws: the source's error when its rebuild fails, or the file system's error when a disk copy
    ///   cannot be listed or deleted.
    public func purgeDisk() async throws {
        purgeMemoryCache()
        if let source {
            try await source.rebuildCache()
            return
        }
        guard let directory, FileManager.default.fileExists(atPath: directory.path) else { return }
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".json") {
            try FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    private func persist(_ details: AccountDetails, for accountId: String) {
        guard let directory, let url = fileURL(for: accountId) else {
            return
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try JSONEncoder().encode(details).write(to: url, options: .atomic)
        } catch {
            // The memory entry stands; the disk copy is only a warm start for the next launch.
            Self.logger.error("cannot write the cached details to disk", metadata: ["account": "\(accountId)", "error": "\(error)"])
        }
    }
}
