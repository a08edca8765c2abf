//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import SpeziAccountStore

/// Building large logs fast, for tests and benchmarks: typed events appended as they are, past the
/// store's commands and their checks (no password hashing, no validation of the details). The
/// values are still sealed with each account's key, as the store seals them.
extension AccountStore {
    /// Makes the vault keys of `accountIds` with one write; nothing for a store without a vault.
    /// Seeding many accounts is faster with their keys made up front, a batch at a time.
    ///
    /// - Parameter accountIds: the accounts about to be seeded.
    /// - Throws: a storage error of the vault.
    public func seedKeys(for accountIds: [String]) throws {
        try accounts.vault?.makeKeys(for: accountIds)
    }

    /// Appends `events` as the new stream of `accountId` (the stream must not exist).
    ///
    /// - Parameters:
    ///   - events: the account's events, `account.created` first.
    ///   - accountId: the account's id.
    /// - Returns: the positions and the stream's version after the append.
    /// - Throws: `EventLogError.wrongExpectedVersion` when the stream exists, or a storage error.
    @discardableResult
    public func seed(_ events: [AccountEvent], as accountId: String) async throws -> AppendResult {
        try await accounts.append(events, to: accountId, expectedVersion: .noStream)
    }
}
