//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

package import BlockingPool
import Foundation

extension BlockingPool {
    /// Password derivations: no more at once than there are cores (each takes ~128 MiB and ~0.5 s).
    static let hashing = BlockingPool(threads: max(1, ProcessInfo.processInfo.activeProcessorCount), name: "scrypt")
    /// Key vault writes and their flushes, one at a time (the vault serializes them anyway).
    package static let vault = BlockingPool(threads: 1, name: "key vault")
}

extension PasswordHasher {
    /// ``hash(_:)`` on the hashing pool.
    package func hashOffPool(_ password: String) async throws -> String {
        try await BlockingPool.hashing.run { [self] in try hash(password) }
    }

    /// ``verify(_:against:)`` on the hashing pool.
    package func verifyOffPool(_ password: String, against stored: String) async throws -> Bool {
        try await BlockingPool.hashing.run { [self] in try verify(password, against: stored) }
    }
}
