//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Runs `body` against a deadline: its result, or `timedOut()` thrown once `timeout` has passed
/// (the body is cancelled then). AsyncHTTPClient's own timeout covers the answer's head only; this
/// one covers the body being read too, so a provider that trickles its answer is cut off as well.
///
/// - Parameters:
///   - timeout: How long the body may take.
///   - timedOut: The error to throw when it takes longer.
///   - body: The work.
/// - Returns: What `body` returned.
/// - Throws: What `body` threw, or `timedOut()`.
package func withDeadline<T: Sendable>(
    _ timeout: Duration, timedOut: @autoclosure @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw timedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw timedOut() }
        return first
    }
}
