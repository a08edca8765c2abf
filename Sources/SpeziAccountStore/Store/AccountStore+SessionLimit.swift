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
        var started: Set<String> = []
        var ending: Set<String> = []
        for event in events {
            switch event {
            case let .sessionStarted(sessionHash, _): started.insert(sessionHash)
            case let .sessionEnded(sessionHash, _): ending.insert(sessionHash)
            default: break
            }
        }
        guard !started.isEmpty else { return [] }
        let now = Self.micros(options.clock())
        // A session started again (a keyed retry hands out the same secret) is not ended for room.
        let open = state.sessions.filter { $0.value > now && !ending.contains($0.key) && !started.contains($0.key) }
        let excess = open.count + started.count - max(limit, 1)
        guard excess > 0 else { return [] }
        return open.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.prefix(excess).map {
            .sessionEnded(sessionHash: $0.key, reason: Self.sessionLimitReason)
        }
    }
}
