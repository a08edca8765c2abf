//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

extension AccountStore {
    /// The reason of an `auth.session-ended` that made room for a newer session
    /// (``AccountStoreLimits/maxOpenSessionsPerAccount``).
    static let sessionLimitReason = "session-limit"

    /// What `events`, about to be appended to an account in `state`, must also append so that the
    /// account keeps at most ``AccountStoreLimits/maxOpenSessionsPerAccount`` sessions open: an
    /// `auth.session-ended` (reason `session-limit`) for each open session that must go, those
    /// that expire first (ties by hash, so every server picks the same). Empty when `events` start
    /// no session or the account stays within the limit.
    ///
    /// The events are appended at the version `state` was read at, so two sign-ins released
    /// together cannot both see room for one more.
    func sessionLimitEvents(for state: AccountState, adding events: [AccountEvent]) -> [AccountEvent] {
        guard let limit = options.limits.maxOpenSessionsPerAccount else { return [] }
        // A few hashes at most: looked through, not hashed.
        var started: [String] = []
        var ending: [String] = []
        for event in events {
            switch event {
            case let .sessionStarted(sessionHash, _) where !started.contains(sessionHash): started.append(sessionHash)
            case let .sessionEnded(sessionHash, _): ending.append(sessionHash)
            default: break
            }
        }
        // Within the limit even if every session recorded were open: nothing to look at.
        guard !started.isEmpty, state.sessions.count + started.count > max(limit, 1) else { return [] }
        let now = Self.micros(options.clock())
        // A session started again (a keyed retry hands out the same secret) is not ended for room.
        var open: [(expires: Int64, hash: String)] = []
        open.reserveCapacity(state.sessions.count)
        for (hash, expires) in state.sessions where expires > now && !ending.contains(hash) && !started.contains(hash) {
            open.append((expires, hash))
        }
        let excess = open.count + started.count - max(limit, 1)
        guard excess > 0 else { return [] }
        let first: (_ a: (expires: Int64, hash: String), _ b: (expires: Int64, hash: String)) -> Bool = {
            ($0.expires, $0.hash) < ($1.expires, $1.hash)
        }
        // At the limit, each sign-in ends one session: the one that expires first, without a sort.
        let ended = excess == 1 ? open.min(by: first).map { [$0] } ?? [] : Array(open.sorted(by: first).prefix(excess))
        return ended.map { .sessionEnded(sessionHash: $0.hash, reason: Self.sessionLimitReason) }
    }
}
