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
///
/// Beside each state it keeps that state's renderings (``AccountStore/rendering(of:as:_:)``): they
/// go when the state is replaced by a newer one or forgotten.
final class RecentStates: Sendable {
    private struct Kept {
        var state: AccountState
        /// Renderings of this very state, by name.
        var renderings: [String: any Sendable] = [:]
    }

    private let states = Mutex<[String: Kept]>([:])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    /// The state kept for `accountId` (of whatever version it was kept at), or nil.
    func state(of accountId: String) -> AccountState? {
        states.withLock { $0[accountId]?.state }
    }

    /// Keeps `state` for its account (the renderings of the one it replaces go), unless a newer
    /// state of it is kept already (two tasks that saw two versions keep the later one).
    func keep(_ state: AccountState) {
        guard capacity > 0 else { return }
        states.withLock { states in
            if let kept = states[state.accountId] {
                if kept.state.version < state.version { states[state.accountId] = Kept(state: state) }
                return
            }
            if states.count >= capacity { states.remove(at: states.startIndex) }
            states[state.accountId] = Kept(state: state)
        }
    }

    /// Drops the state kept for `accountId` (a deleted account's), with its renderings.
    func forget(_ accountId: String) {
        _ = states.withLock { $0.removeValue(forKey: accountId) }
    }

    /// The rendering named `name` of the kept state of `state`'s account, if that state is of
    /// `state`'s version.
    func rendering<Value: Sendable>(of state: AccountState, as name: String, _: Value.Type) -> Value? {
        states.withLock { states in
            guard let kept = states[state.accountId], kept.state.version == state.version else { return nil }
            return kept.renderings[name] as? Value
        }
    }

    /// Keeps `value` as the rendering named `name` of `state`, if `state`'s version is the one kept
    /// for its account (else there is nothing to keep it beside).
    func keep(_ value: some Sendable, as name: String, of state: AccountState) {
        states.withLock { states in
            guard states[state.accountId]?.state.version == state.version else { return }
            states[state.accountId]?.renderings[name] = value
        }
    }

    /// How many states are held (for tests).
    var count: Int { states.withLock { $0.count } }
}
