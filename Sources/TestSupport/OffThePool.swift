//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Runs `body` on a thread of its own and suspends the caller until it returns (or throws).
///
/// For test code that waits for a child process, a program or a file: Swift Testing runs tests
/// on the cooperative pool, which has one thread per core, so two tests waiting in
/// `waitUntilExit()` on a two-core machine would stall every other test (their connections and
/// deadlines included) for as long as the children run.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
