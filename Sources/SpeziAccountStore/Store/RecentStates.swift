//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization

/// The decoded states of the accounts read most recently, each with the stream version it holds.
///
/// A session check reads the account's stream version from the log's index anyway (to know the
/// cached state is current); when this holds that version, it answers without reading the state
/// from the details cache, opening its seal and decoding it again: on `GET /v1/account`, that
/// was about a tenth of the server's time. An entry is served only for the exact version it was
/// decoded at, so a change made by any process (a new session, a logout, a deletion) is seen at
/// once: its event raises the version. Bounded: when full, an entry chosen by the dictionary's
/// order (no particular one) makes room.
final class RecentStates: Sendable {
    private let states = Mutex<[String: AccountState]>([:])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    /// The state of `accountId` at `version`, or nil when the one held is of another version
    /// (which is then dropped) or none is.
    func state(of accountId: String, version: UInt64) -> AccountState? {
        states.withLock { states in
            guard let state = states[accountId] else { return nil }
            guard state.version == version else {
                states[accountId] = nil
                return nil
            }
            return state
        }
    }

    /// Keeps `state` for its account.
    func keep(_ state: AccountState) {
        guard capacity > 0 else { return }
        states.withLock { states in
            if states[state.accountId] == nil, states.count >= capacity { states.remove(at: states.startIndex) }
            states[state.accountId] = state
        }
    }

    /// How many states are held (for tests).
    var count: Int { states.withLock { $0.count } }
}
