//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import Logging
import Synchronization

/// How many requests of a kind a client (or an account) may make: `burst` at once, then one more
/// every `60 / perMinute` seconds.
public struct RateLimit: Sendable, Equatable {
    /// Requests allowed at once.
    public var burst: Int
    /// Requests allowed per minute after the burst.
    public var perMinute: Int

    /// A limit of `burst` at once and `perMinute` after.
    ///
    /// - Parameters:
    ///   - burst: Requests allowed at once; at least 1.
    ///   - perMinute: Requests allowed per minute after the burst; at least 1.
    public init(burst: Int, perMinute: Int) {
        self.burst = max(1, burst)
        self.perMinute = max(1, perMinute)
    }
}

/// The server's rate limits. Per client means per remote address (an IPv6 /64; behind trusted
/// proxies the address they forwarded for); per account means per normalized user id as submitted
/// (whether or not it has an account, so the answers reveal nothing), or per signed-in account.
///
/// Password checks are also counted by the store before they are made (`LoginThrottling`):
/// these limits bound the request rate, the store's throttle the guesses.
public struct RateLimits: Sendable, Equatable {
    /// Logins from one address.
    public var loginsPerClient = RateLimit(burst: 30, perMinute: 30)
    /// Logins for one user id from one client. (A user id's logins from anywhere are not cut off:
    /// the store spaces them out instead, so that an attacker cannot keep the owner out.)
    public var loginsPerAccount = RateLimit(burst: 10, perMinute: 10)
    /// Re-authentications with the current password (a change of credentials, a deletion) of one
    /// signed-in account.
    public var stepUpsPerAccount = RateLimit(burst: 5, perMinute: 2)
    /// Signups (anonymous ones included) from one address.
    public var signupsPerClient = RateLimit(burst: 10, perMinute: 10)
    /// Password reset requests and completions from one address.
    public var resetsPerClient = RateLimit(burst: 10, perMinute: 5)
    /// Password reset requests for one user id. Beyond it a request is still answered 202, but no
    /// new link is sent (the links sent before stay valid until they expire or one is used).
    public var resetsPerAccount = RateLimit(burst: 3, perMinute: 1)
    /// Password reset completions naming one user id.
    public var resetCompletionsPerAccount = RateLimit(burst: 5, perMinute: 2)
    /// Signup requests naming one user id, when signups are confirmed (each one sends a message
    /// to its owner).
    public var signupsPerUserId = RateLimit(burst: 3, perMinute: 1)
    /// Changes of one account's user id (a taken user id is refused, so each try tells whether it
    /// has an account: this bounds how fast an account can probe).
    public var userIdChangesPerAccount = RateLimit(burst: 3, perMinute: 1)
    /// Requests from one client that append a record without a signed-in account (anonymous
    /// sign-ins, signups, failed logins, reset requests): this bounds what one address can make
    /// the log grow by, at most `burst + perMinute × 1,440` records a day (by default 7,300).
    public var recordsPerClient = RateLimit(burst: 100, perMinute: 5)
    /// Admin requests that present the credential (HTTP Basic), from one address.
    public var adminAttemptsPerClient = RateLimit(burst: 20, perMinute: 20)

    /// The defaults above.
    public init() {}
}

/// Token buckets by key, in memory (each server keeps its own). Buckets that have refilled are
/// dropped once there are many, so memory stays bounded by the recent callers.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    private let clock = ContinuousClock()
    private let pruneAbove: Int

    init(pruneAbove: Int = 100_000) {
        self.pruneAbove = pruneAbove
    }

    /// Takes one request from `key`'s bucket; nil when allowed, else the seconds until it would be.
    func take(_ key: String, limit: RateLimit) -> Int? {
        let now = clock.now
        let rate = Double(limit.perMinute) / 60
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: Double(limit.burst), updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(Double(limit.burst), bucket.tokens + seconds * rate)
            bucket.updated = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                if buckets.count > pruneAbove { Self.prune(&buckets, now: now) }
                return nil
            }
            buckets[key] = bucket
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }

    /// Drops the buckets untouched for ten minutes (any limit has refilled them by then).
    private static func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { now - $0.value.updated < .seconds(600) }
    }
}

/// The per-client limits, each a bucket of its own.
enum ClientRateLimitKind: String, Sendable {
    case signups = "signup-client"
    case logins = "login-client"
    case resets = "reset-client"
    case records = "records-client"

    func limit(in limits: RateLimits) -> RateLimit {
        switch self {
        case .signups: limits.signupsPerClient
        case .logins: limits.loginsPerClient
        case .resets: limits.resetsPerClient
        case .records: limits.recordsPerClient
        }
    }
}

/// Counts a request against a per-client limit before its route runs, and answers 429 with
/// `Retry-After` beyond it (the route does not run).
struct ClientRateLimitMiddleware<Context: AccountRequestContext>: RouterMiddleware {
    typealias Kind = ClientRateLimitKind

    let kind: Kind
    let limit: RateLimit
    let limiter: RateLimiter
    let logger: Logger

    init(kind: Kind, limits: RateLimits, limiter: RateLimiter, logger: Logger) {
        self.kind = kind
        self.limit = kind.limit(in: limits)
        self.limiter = limiter
        self.logger = logger
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let wait = limiter.take("\(kind.rawValue):\(context.client)", limit: limit) {
            logger.notice("rate limited", metadata: ["limit": "\(kind.rawValue)"])
            return Problem.rateLimited(retryAfter: wait).response()
        }
        return try await next(request, context)
    }
}
