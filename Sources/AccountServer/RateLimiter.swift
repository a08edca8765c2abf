//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import Logging
import Metrics
import SpeziAccountStore
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
    /// Admin requests that present the credential (the sign-in form, HTTP Basic), from one address.
    public var adminAttemptsPerClient = RateLimit(burst: 20, perMinute: 20)
    /// Admin requests that present the credential, from all addresses together, except those of a
    /// browser that signed in before (its admin device cookie): guesses spread over many addresses
    /// are bounded, and the administrator's own browser gets in whatever they do.
    public var adminAttemptsOverall = RateLimit(burst: 30, perMinute: 10)
    /// Pages of `GET /v1/account/history` per account (each folds the account's stream up to it).
    public var historyPagesPerAccount = RateLimit(burst: 30, perMinute: 30)

    /// The defaults above.
    public init() {}
}

/// Token buckets by key, in memory (each server keeps its own). At most `capacity` buckets are
/// kept, the least recently used forgotten first (``RecencyTable``): memory is bounded by count,
/// and by bytes, whatever the keys look like (each is 16 bytes of its SHA-256). Forgetting a
/// bucket can only give its key a fresh allowance, so the capacity is far above what honest
/// traffic touches in ten minutes (by then any limit has refilled); a flood of new keys shows in
/// the `rate_limiter_evictions` counter.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets: Mutex<RecencyTable<Bucket>>
    private let clock = ContinuousClock()
    private let name: String
    private let keysGauge: Gauge
    private let bytesGauge: Gauge
    private let evictionsCounter: Counter

    /// - Parameters:
    ///   - name: The limiter's name in its metrics (`limiter` dimension).
    ///   - capacity: The most buckets kept (default 200,000: about 20 MiB).
    init(name: String = "api", capacity: Int = 200_000) {
        self.buckets = Mutex(RecencyTable(capacity: capacity))
        self.name = name
        self.keysGauge = Gauge(label: "rate_limiter_keys", dimensions: [("limiter", name)])
        self.bytesGauge = Gauge(label: "rate_limiter_bytes", dimensions: [("limiter", name)])
        self.evictionsCounter = Counter(label: "rate_limiter_evictions", dimensions: [("limiter", name)])
    }

    /// Takes `cost` from `key`'s bucket; nil when allowed, else the seconds until it would be.
    func take(_ key: String, limit: RateLimit, cost: Int = 1) -> Int? {
        let now = clock.now
        let tableKey = TableKey(key)
        let rate = Double(limit.perMinute) / 60
        let cost = Double(max(1, cost))
        let (wait, count, bytes, evicted) = buckets.withLock { table in
            var bucket = Self.refilled(table.get(tableKey), limit: limit, now: now)
            let before = table.evictions
            defer { table.set(tableKey, bucket) }
            if bucket.tokens >= cost {
                bucket.tokens -= cost
                return (nil as Int?, table.count, table.approximateBytes, table.evictions - before)
            }
            let seconds = max(1, Int(((min(cost, Double(limit.burst)) - bucket.tokens) / rate).rounded(.up)))
            return (seconds, table.count, table.approximateBytes, table.evictions - before)
        }
        keysGauge.record(count)
        bytesGauge.record(bytes)
        if evicted > 0 { evictionsCounter.increment(by: evicted) }
        return wait
    }

    /// Whether `key`'s bucket is empty now (a take would be refused); nothing is taken.
    func isExhausted(_ key: String, limit: RateLimit) -> Bool {
        let now = clock.now
        return buckets.withLock { table in
            Self.refilled(table.peek(TableKey(key)), limit: limit, now: now).tokens < 1
        }
    }

    /// Buckets kept now; for tests.
    var count: Int { buckets.withLock { $0.count } }
    /// The estimated bytes the buckets hold; for tests.
    var approximateBytes: Int { buckets.withLock { $0.approximateBytes } }

    private static func refilled(_ bucket: Bucket?, limit: RateLimit, now: ContinuousClock.Instant) -> Bucket {
        guard var bucket else { return Bucket(tokens: Double(limit.burst), updated: now) }
        let elapsed = now - bucket.updated
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        bucket.tokens = min(Double(limit.burst), bucket.tokens + seconds * Double(limit.perMinute) / 60)
        bucket.updated = now
        return bucket
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

    init(kind: Kind, limits: RateLimits, limiter: RateLimiter) {
        self.kind = kind
        self.limit = kind.limit(in: limits)
        self.limiter = limiter
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let wait = limiter.take("\(kind.rawValue):\(context.client)", limit: limit) {
            context.logger.notice("rate limited", metadata: ["limit": "\(kind.rawValue)"])
            return Problem.rateLimited(retryAfter: wait).response()
        }
        return try await next(request, context)
    }
}
