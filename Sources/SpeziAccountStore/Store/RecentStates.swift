//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization

/// The decoded states of the accounts used most recently, each as of the stream version it holds.
///
/// `AccountStore.currentState(of:)` starts from the newest state at hand and applies the events
/// after it, so an entry is never served as it is when the stream has moved on: a change made by
/// any process (a new session, a logout, a deletion) is seen at once. With an entry, a session
/// check neither reads the details cache's entry nor opens its seal and decodes it again: on
/// `GET /v1/account`, that was about a tenth of the server's time. Bounded: when full, an entry
/// chosen by the dictionary's order (no particular one) makes room.
final class RecentStates: Sendable {
    private let states = Mutex<[String: AccountState]>([:])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    /// The state kept for `accountId` (of whatever version it was kept at), or nil.
    func state(of accountId: String) -> AccountState? {
        states.withLock { $0[accountId] }
    }

    /// Keeps `state` for its account.
    func keep(_ state: AccountState) {
        guard capacity > 0 else { return }
        states.withLock { states in
            if states[state.accountId] == nil, states.count >= capacity { states.remove(at: states.startIndex) }
            states[state.accountId] = state
        }
    }

    /// Drops the state kept for `accountId` (a deleted account's).
    func forget(_ accountId: String) {
        _ = states.withLock { $0.removeValue(forKey: accountId) }
    }

    /// How many states are held (for tests).
    var count: Int { states.withLock { $0.count } }
}
