//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// How an append reaches the disk before it is acknowledged, for every backend.
public enum Durability: Sendable, Equatable {
    /// Flushed before the append returns: nothing acknowledged is lost, even to a power cut.
    case durable
    /// Not flushed: a process crash loses nothing, but an operating-system crash or a power cut
    /// may lose what was acknowledged since the last `sync()` (for tests and bulk imports).
    case relaxed
    /// Data flushed, the commit record not: a power cut may undo the last commit only, never
    /// damage the data (for state that can be rebuilt, such as projections).
    case lastCommitMayRollBack
}
