//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ServiceLifecycle

extension AccountStore: Service {
    /// Runs the store as a service of a `ServiceGroup`: it serves until the group shuts down
    /// gracefully (SIGTERM, say) or is cancelled, then closes. Appends already queued are committed
    /// first, so every acknowledged append is durable when the group's `run()` returns.
    ///
    /// - Throws: Nothing in practice: the end of the wait, by a graceful shutdown or a cancellation,
    ///   is no error, and closing does not fail.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}
