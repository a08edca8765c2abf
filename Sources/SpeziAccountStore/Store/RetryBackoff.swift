//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The wait before retrying an outbound call that failed `attempt` times in a row (a webhook
/// delivery, a provider token revocation): exponential from `base`, doubled per failure, with
/// jitter between half and the whole, at most `maximum`.
package enum RetryBackoff {
    /// The wait before the next attempt.
    ///
    /// - Parameters:
    ///   - attempt: Failures so far (1 for the first).
    ///   - base: The wait after the first failure.
    ///   - maximum: The longest wait.
    /// - Returns: The jittered wait.
    package static func delay(attempt: Int, base: Duration, maximum: Duration) -> Duration {
        let grown = base * (1 << min(max(attempt, 1) - 1, 20))
        return min(grown, maximum) * Double.random(in: 0.5...1)
    }
}
