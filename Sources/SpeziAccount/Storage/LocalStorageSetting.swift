//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// How an ``AccountDetailsCache`` keeps its copies: upstream's setting from SpeziLocalStorage, with
/// its case names. Linux has no keychain and no secure enclave: the encrypted settings are accepted
/// so that upstream code compiles, and keep the details in memory only, never unencrypted on disk.
public enum LocalStorageSetting: Sendable, Hashable {
    /// Unencrypted files in the cache directory (`excludeFromBackup` has no effect on Linux).
    case unencrypted(excludeFromBackup: Bool = true)
    /// Encrypted with a key in the keychain: on Linux, memory only.
    case encryptedUsingKeychain(userPresence: Bool = false, excludeFromBackup: Bool = true)
    /// Encrypted with a key in the secure enclave: on Linux, memory only.
    case encryptedUsingSecureEnclave(userPresence: Bool = false)

    /// Whether the setting writes to disk on this platform.
    public var storesOnDisk: Bool {
        if case .unencrypted = self {
            return true
        }
        return false
    }

    /// Where ``AccountDetailsCache`` writes when given a setting: `SpeziAccount/AccountDetailsCache`
    /// in the user's cache directory (`~/.cache` on Linux), or in the temporary directory when there
    /// is none.
    public static var defaultDirectory: URL {
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent("SpeziAccount", isDirectory: true).appendingPathComponent("AccountDetailsCache", isDirectory: true)
    }
}
