//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi

/// Caches AccountDetails per account in memory, optionally backed by one JSON file per account.
///
/// Storage providers use it to answer `load` at once. Entries are cleared on disassociation.
public final class AccountDetailsCache: Module, DefaultInitializable, @unchecked Sendable {
    private let memory = SpeziLock<[String: AccountDetails]>([:])
    /// The directory of the on-disk copies, if any.
    public let directory: URL?

    /// A memory-only cache.
    public convenience init() {
        self.init(directory: nil)
    }

    /// A cache that also writes to `directory` (created if needed).
    public init(directory: URL?) {
        self.directory = directory
    }

    private func fileURL(for accountId: String) -> URL? {
        let safe = accountId.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? accountId
        return directory?.appendingPathComponent("\(safe).json")
    }

    /// The cached details of the given keys: from memory, else from disk (then kept in memory); `nil` when absent.
    public func loadEntry(for accountId: String, _ keys: [any AccountKey.Type]) -> AccountDetails? {
        if let details = memory.current[accountId] {
            return details.filtered(to: keys)
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
    public func communicateModifications(for accountId: String, _ modifications: AccountModifications) {
        let details = memory.withLock { cache in
            let updated = modifications.applied(to: cache[accountId] ?? AccountDetails())
            cache[accountId] = updated
            return updated
        }
        persist(details, for: accountId)
    }

    /// Replaces the cached entry with details received from a remote.
    public func communicateRemoteChanges(for accountId: String, _ details: AccountDetails) {
        memory.withLock { $0[accountId] = details }
        persist(details, for: accountId)
    }

    /// Removes the entry from memory and disk.
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

    private func persist(_ details: AccountDetails, for accountId: String) {
        guard let directory, let url = fileURL(for: accountId) else {
            return
        }
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let data = try? JSONEncoder().encode(details) {
            try? data.write(to: url, options: .atomic)
        }
    }
}
