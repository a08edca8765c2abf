//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import IdentityTokens
import Logging
import ServiceLifecycle
import SpeziAccountStore

/// Revokes the provider tokens the store owes a revocation (deleted accounts, unlinked identities)
/// at their providers' revocation endpoints, and records each revocation in the log
/// (`auth.provider-token-revoked`). What is owed comes from the log, so a revocation that failed,
/// or was cut off by a restart, is tried again until the provider confirms it: after a failure,
/// that token waits with exponential backoff and jitter (from ``interval`` up to
/// ``maximumBackoff``) while the others go on. Several servers on one log may both call for one token; revoking twice is harmless.
struct ProviderTokenRevoker: Service {
    let store: AccountStore
    /// The revocation clients, by issuer.
    let clients: [String: ProviderTokenClient]
    let interval: Duration
    let maximumBackoff: Duration
    let logger: Logger

    func run() async throws {
        // Shutdown cancels the loop: a revocation cut off is owed still and done at the next start.
        try? await cancelWhenGracefulShutdown {
            var failures: [String: (count: Int, retryAt: ContinuousClock.Instant)] = [:]
            var unknownIssuers: Set<String> = []
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do {
                    for revocation in try await store.pendingProviderTokenRevocations(limit: 100) {
                        let key = revocation.accountId + "\u{0}" + revocation.issuer
                        if let failure = failures[key], failure.retryAt > .now { continue }
                        guard let client = clients[revocation.issuer] else {
                            if unknownIssuers.insert(revocation.issuer).inserted {
                                logger.error(
                                    "a provider token is owed a revocation, but no provider with token endpoints has its issuer",
                                    metadata: ["issuer": "\(revocation.issuer)"])
                            }
                            continue
                        }
                        do {
                            try await client.revoke(refreshToken: revocation.token)
                            try await store.recordProviderTokenRevoked(revocation, context: AccountStore.Context(actor: "provider-token-revoker"))
                            failures[key] = nil
                            logger.info("provider token revoked", metadata: ["account": "\(revocation.accountId)", "issuer": "\(revocation.issuer)"])
                        } catch {
                            let count = (failures[key]?.count ?? 0) + 1
                            let wait = RetryBackoff.delay(attempt: count, base: interval, maximum: maximumBackoff)
                            failures[key] = (count, .now + wait)
                            logger.warning(
                                "a provider token revocation failed; it is tried again",
                                metadata: [
                                    "account": "\(revocation.accountId)", "issuer": "\(revocation.issuer)", "attempt": "\(count)",
                                    "retryIn": "\(wait)", "error": "\(error)"
                                ])
                        }
                    }
                } catch {
                    logger.error("the provider tokens owed a revocation cannot be read", metadata: ["error": "\(error)"])
                }
                try await Task.sleep(for: interval)
            }
        }
    }
}
