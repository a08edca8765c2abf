//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// How password checks are throttled: per user id and client (the lockout), and per user id from
/// anywhere (a ceiling that slows guessing down without keeping the owner out).
///
/// Follows OWASP's authentication and credential-stuffing cheat sheets and Keycloak's temporary
/// brute-force lockout: a lock is temporary and keyed to the client that earned it, so an
/// attacker elsewhere cannot lock the owner out, and the account-wide ceiling only spaces checks
/// out instead of refusing them.
public struct LoginThrottling: Sendable, Equatable {
    /// Failed checks in a row from one client (one address, or one IPv6 /64) for one user id
    /// before that client is locked out of that user id.
    public var attemptsPerClient: Int
    /// How long such a lock lasts. Its failure count expires with it: after the lock (or after this
    /// long without a failure) the client starts afresh.
    public var lockDuration: Duration
    /// Failed checks in a row for one user id, from any client, after which its checks are spaced
    /// out by ``slowdownInterval``.
    public var accountWideAttempts: Int
    /// The spacing of checks for a user id past ``accountWideAttempts``: one check per interval,
    /// in arrival order; a request waits for its turn (at most ``maximumWait``).
    public var slowdownInterval: Duration
    /// The longest a request waits for its turn; beyond it the answer is "locked out" with the time
    /// to come back.
    public var maximumWait: Duration

    /// Five failures per client lock it for five minutes; past 20 failures of a user id, one check
    /// every 2 s, waiting at most 10 s.
    ///
    /// - Parameters:
    ///   - attemptsPerClient: Failures in a row from one client that lock it; at least 1.
    ///   - lockDuration: How long the lock lasts.
    ///   - accountWideAttempts: Failures in a row for one user id, from any client, after which its
    ///     checks are spaced out; at least 1.
    ///   - slowdownInterval: The spacing of those checks.
    ///   - maximumWait: The longest a request waits for its turn before it is turned away.
    public init(
        attemptsPerClient: Int = 5, lockDuration: Duration = .seconds(300), accountWideAttempts: Int = 20,
        slowdownInterval: Duration = .seconds(2), maximumWait: Duration = .seconds(10)
    ) {
        self.attemptsPerClient = max(1, attemptsPerClient)
        self.lockDuration = lockDuration
        self.accountWideAttempts = max(1, accountWideAttempts)
        self.slowdownInterval = slowdownInterval
        self.maximumWait = maximumWait
    }
}

/// The store's admission of password checks: an attempt is counted before its hash is verified,
/// under one lock, so N checks released together for one user id and client get at most the
/// client's remaining allowance; the others are refused without hashing. Kept in memory by each
/// process (several servers on one log throttle independently).
final class LoginThrottle: Sendable {
    /// A counted attempt, to be finished with its outcome.
    struct Ticket: Sendable {
        let userKey: String
        let client: String
        /// How long to wait before checking (the account-wide spacing).
        let delay: Duration
    }

    enum Outcome {
        /// The password was right.
        case succeeded
        /// The password was wrong.
        case failed
        /// No check was made (the request was cancelled or failed otherwise).
        case abandoned
    }

    private struct ClientEntry {
        var failures = 0
        var lastFailure: Date?
        var inFlight = 0
    }

    private struct UserEntry {
        var clients: [String: ClientEntry] = [:]
        var failures = 0
        var lastFailure: Date?
        var nextSlot: Date?

        var isIdle: Bool { clients.isEmpty && failures == 0 }
    }

    private let policy: LoginThrottling
    private let entries = Mutex<[String: UserEntry]>([:])
    private let pruneAbove: Int

    init(policy: LoginThrottling, pruneAbove: Int = 100_000) {
        self.policy = policy
        self.pruneAbove = pruneAbove
    }

    /// Counts an attempt for `userKey` (a normalized user id) from `client`, or throws
    /// ``AccountStoreError/lockedOut(until:)`` when the client has no allowance left (its lock, or
    /// its remaining attempts all in flight) or the account-wide turn is too far off.
    func admit(userKey: String, client: String, now: Date) throws -> Ticket {
        let lock = AccountStore.seconds(policy.lockDuration)
        return try entries.withLock { entries in
            var user = entries[userKey] ?? UserEntry()
            if let last = user.lastFailure, now.timeIntervalSince(last) >= lock {
                user.failures = 0
                user.lastFailure = nil
            }
            var entry = user.clients[client] ?? ClientEntry()
            if let last = entry.lastFailure, now.timeIntervalSince(last) >= lock {
                entry.failures = 0
                entry.lastFailure = nil
            }
            if entry.failures >= policy.attemptsPerClient, let last = entry.lastFailure {
                throw AccountStoreError.lockedOut(until: last.addingTimeInterval(lock))
            }
            if entry.failures + entry.inFlight >= policy.attemptsPerClient {
                // The rest of the allowance is being checked right now.
                throw AccountStoreError.lockedOut(until: now.addingTimeInterval(1))
            }
            var delay = Duration.zero
            if user.failures >= policy.accountWideAttempts {
                let slot = max(now, user.nextSlot ?? now)
                let wait = slot.timeIntervalSince(now)
                if wait > AccountStore.seconds(policy.maximumWait) { throw AccountStoreError.lockedOut(until: slot) }
                user.nextSlot = slot.addingTimeInterval(AccountStore.seconds(policy.slowdownInterval))
                delay = .milliseconds(Int64((wait * 1_000).rounded(.up)))
            }
            entry.inFlight += 1
            user.clients[client] = entry
            entries[userKey] = user
            if entries.count > pruneAbove { Self.prune(&entries, now: now, lock: lock) }
            return Ticket(userKey: userKey, client: client, delay: delay)
        }
    }

    /// Records the outcome of an admitted attempt.
    func finish(_ ticket: Ticket, _ outcome: Outcome, now: Date) {
        entries.withLock { entries in
            var user = entries[ticket.userKey] ?? UserEntry()
            var entry = user.clients[ticket.client] ?? ClientEntry()
            entry.inFlight = max(0, entry.inFlight - 1)
            switch outcome {
            case .succeeded:
                entry.failures = 0
                entry.lastFailure = nil
                user.failures = 0
                user.lastFailure = nil
                user.nextSlot = nil
            case .failed:
                entry.failures += 1
                entry.lastFailure = now
                user.failures += 1
                user.lastFailure = now
            case .abandoned:
                break
            }
            user.clients[ticket.client] = entry.failures == 0 && entry.inFlight == 0 ? nil : entry
            entries[ticket.userKey] = user.isIdle ? nil : user
        }
    }

    /// Forgets every failure of `userKey` (after a completed password reset: whoever holds the new
    /// password is the owner). Attempts in flight keep their count.
    func clear(userKey: String) {
        entries.withLock { entries in
            guard var user = entries[userKey] else { return }
            user.failures = 0
            user.lastFailure = nil
            user.nextSlot = nil
            user.clients = user.clients.compactMapValues { entry in
                entry.inFlight == 0 ? nil : ClientEntry(inFlight: entry.inFlight)
            }
            entries[userKey] = user.isIdle ? nil : user
        }
    }

    /// How many user ids have state (failures or attempts in flight); for tests.
    var trackedUserIds: Int { entries.withLock { $0.count } }

    /// Drops the entries whose failures have all expired and that have nothing in flight.
    private static func prune(_ entries: inout [String: UserEntry], now: Date, lock: TimeInterval) {
        entries = entries.filter { _, user in
            user.clients.values.contains { $0.inFlight > 0 || ($0.lastFailure.map { now.timeIntervalSince($0) < lock } ?? false) }
                || (user.lastFailure.map { now.timeIntervalSince($0) < lock } ?? false)
        }
    }
}

/// A bound on the password derivations waiting for the hashing pool: beyond it a request is
/// refused at once (``AccountStoreError/overloaded(retryAfter:)``) instead of queueing behind work
/// that would take longer than any client waits.
final class HashingAdmission: Sendable {
    private let waiting = Mutex(0)
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `body` if fewer than `limit` derivations are queued or running.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if limit == .max { return try await body() }
        let admitted = waiting.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else { throw AccountStoreError.overloaded(retryAfter: 1) }
        defer { waiting.withLock { $0 -= 1 } }
        return try await body()
    }

    /// Derivations queued or running now.
    var current: Int { waiting.withLock { $0 } }
}
