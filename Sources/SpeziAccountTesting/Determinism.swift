//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// A clock for tests: starts at a fixed time and moves on by a fixed step at every reading, so
/// event times are the same in every run.
public final class TestClock: Sendable {
    private let state: Mutex<Date>
    private let step: TimeInterval

    /// - Parameters:
    ///   - start: the first time read (default 2026-01-01T00:00:00Z).
    ///   - step: how far each reading advances the clock.
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600), step: TimeInterval = 1) {
        state = Mutex(start)
        self.step = step
    }

    /// Reads the clock (and advances it).
    ///
    /// - Returns: the clock's current time; the next reading is one step later.
    public func now() -> Date {
        state.withLock { current in
            defer { current = current.addingTimeInterval(step) }
            return current
        }
    }

    /// Moves the clock forward without reading it (e.g. past a lockout).
    ///
    /// - Parameter interval: how far to move it, in seconds.
    public func advance(by interval: TimeInterval) {
        state.withLock { $0 = $0.addingTimeInterval(interval) }
    }
}

/// Account ids for tests: `account-0001`, `account-0002`, … in order.
public final class SequentialIDs: Sendable {
    private let next = Mutex(1)
    private let prefix: String

    /// Ids `prefix0001`, `prefix0002`, … in order.
    ///
    /// - Parameter prefix: what every id starts with.
    public init(prefix: String = "account-") {
        self.prefix = prefix
    }

    /// The next id.
    ///
    /// - Returns: the prefix followed by the next number, four digits at least.
    public func make() -> String {
        next.withLock { value in
            defer { value += 1 }
            return prefix + String(format: "%04d", value)
        }
    }
}
