//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount

extension AccountStore {
    /// The account's state after every event of its stream, or nil when it has no stream (or its
    /// id could not be one). What every command and session check decides on.
    ///
    /// The newest state at hand (kept in memory, ``AccountStoreOptions/recentStates``, or else the
    /// details cache's) is brought up to date with the events after its version, read from the
    /// stream in one call (on the embedded log, usually one index lookup that finds none); only
    /// an account known to neither is folded from its first event. A command on an account with a
    /// long history (every login appends two events) so costs the same as on a new one: folding
    /// every stream from the start cost a time that grew with it. The details cache's states equal
    /// the fold of their streams (the replay tests compare them), so the result is the fold's.
    ///
    /// - Parameter accountId: The account.
    /// - Returns: The latest state, deleted accounts included, or nil.
    /// - Throws: The log's `EventLogError` when the stream cannot be read, or a decoding error.
    func currentState(of accountId: String) async throws -> AccountState? {
        guard AccountLog.couldBeStream(accountId) else { return nil }
        // A kept state never needs the details cache's (which costs a read, a seal opened and a
        // decoding): the events after it are read either way.
        let kept = recentStates.state(of: accountId)
        let state = try await accounts.load(accountId, after: try kept ?? cachedState(of: accountId))
        if let state, !state.isDeleted {
            if state.version != kept?.version { recentStates.keep(state) }
        } else if kept != nil {
            // A deleted account's personal data does not stay in memory (crypto-shredding).
            recentStates.forget(accountId)
        }
        return state
    }

    /// `render` applied to the account details of `state` (``details(from:)``), made once for
    /// each version of an account's state and kept in memory beside it
    /// (``AccountStoreOptions/recentStates``): a server that answers the same account many times
    /// encodes its details once for each change, not for every request.
    ///
    /// The rendering is kept only while `state` is the newest state the store has seen of its
    /// account, and goes with it: when the account changes, and when it is deleted (its personal
    /// data does not stay in memory). With `recentStates` at 0 nothing is kept.
    ///
    /// - Parameters:
    ///   - state: The account's state, as a session check or command returned it.
    ///   - name: What the rendering is (one name for each kind a caller makes).
    ///   - render: Makes the rendering from the details.
    /// - Returns: The rendering.
    /// - Throws: What ``details(from:)`` or `render` throws.
    public func rendering<Value: Sendable>(
        of state: AccountState, as name: String, _ render: (AccountDetails) throws -> Value
    ) throws -> Value {
        if let kept = recentStates.rendering(of: state, as: name, Value.self) { return kept }
        let value = try render(try details(from: state))
        recentStates.keep(value, as: name, of: state)
        return value
    }
}
