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
/// attacker elsewhere cannot lock the owner out, and the account-wide ceiling spaces strangers'
/// checks out. A known device (``AccountStore/Context/device``: a client that signed in to the
/// user id before, OWASP's device cookies) is never spaced out or refused with the crowd, so the
/// owner's correct password always gets in. The account-wide count is read from the account's
/// stream too, so failures on other servers of the log count.
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
/// process; at most ``capacity`` entries (user ids, and clients or devices per user id), the one
/// touched longest ago forgotten first, so memory stays bounded whatever the user ids look like.
///
/// **Known devices** (OWASP's device cookies): a client that proves it signed in to this user id
/// before (``AccountStore/Context/device``, checked by the caller) is counted apart from the
/// crowd: under its own lockout, and never put in the account-wide queue, so guesses from
/// anywhere else cannot delay or refuse it. A device that fails ``LoginThrottling/attemptsPerClient``
/// times in a row is locked like a client, and is then checked as the client it connects from.
final class LoginThrottle: Sendable {
    /// A counted attempt, to be finished with its outcome.
    struct Ticket: Sendable {
        let userKey: TableKey
        let entryKey: TableKey
        /// How long to wait before checking (the account-wide spacing).
        let delay: Duration
        /// Whether a known device was admitted (never spaced).
        var isDevice = false
        /// Whether this process's own count put the attempt in the account-wide queue already.
        var spaced = false
    }

    enum Outcome {
        /// The password was right.
        case succeeded
        /// The password was wrong.
        case failed
        /// No check was made (the request was cancelled or failed otherwise).
        case abandoned
    }

    /// One row: a user id's account-wide count, or one client's (or device's) count for a user id.
    private struct Entry {
        var failures = 0
        var lastFailure: Date?
        var inFlight = 0
        /// Account-wide rows: the next free turn of the spacing.
        var nextSlot: Date?
        /// Account-wide rows: when a password reset lifted the user id's locks; the failures of its
        /// clients and devices before then no longer count.
        var clearedAt: Date?

        var isIdle: Bool { failures == 0 && inFlight == 0 && nextSlot == nil && clearedAt == nil }
    }

    private let policy: LoginThrottling
    private let entries: Mutex<RecencyTable<Entry>>

    /// The most rows kept (user ids plus their clients and devices).
    let capacity: Int

    init(policy: LoginThrottling, capacity: Int = 200_000) {
        self.policy = policy
        self.capacity = capacity
        self.entries = Mutex(RecencyTable(capacity: capacity))
    }

    /// Counts an attempt for `userKey` (a normalized user id) from `client`, or from the known
    /// `device` when there is one, or throws ``AccountStoreError/lockedOut(until:)`` when the
    /// client has no allowance left (its lock, or its remaining attempts all in flight) or the
    /// account-wide turn is too far off.
    func admit(userKey: String, client: String, device: String? = nil, now: Date) throws -> Ticket {
        let lock = AccountStore.seconds(policy.lockDuration)
        let user = TableKey("user\u{0}" + userKey)
        let clientKey = TableKey("client\u{0}" + userKey + "\u{0}" + client)
        let deviceKey = device.map { TableKey("device\u{0}" + userKey + "\u{0}" + $0) }
        return try entries.withLock { table in
            var account = Self.expired(table.get(user) ?? Entry(), now: now, lock: lock)
            let cleared = account.clearedAt
            // A known device that is not locked: its own count, no account-wide turn.
            if let deviceKey {
                var entry = Self.expired(table.get(deviceKey) ?? Entry(), now: now, lock: lock, clearedAt: cleared)
                if entry.failures < policy.attemptsPerClient {
                    guard entry.failures + entry.inFlight < policy.attemptsPerClient else {
                        throw AccountStoreError.lockedOut(until: now.addingTimeInterval(1))
                    }
                    entry.inFlight += 1
                    table.set(deviceKey, entry)
                    return Ticket(userKey: user, entryKey: deviceKey, delay: .zero, isDevice: true)
                }
                // A locked device is a stranger again.
            }
            var entry = Self.expired(table.get(clientKey) ?? Entry(), now: now, lock: lock, clearedAt: cleared)
            if entry.failures >= policy.attemptsPerClient, let last = entry.lastFailure {
                table.set(clientKey, entry)
                throw AccountStoreError.lockedOut(until: last.addingTimeInterval(lock))
            }
            if entry.failures + entry.inFlight >= policy.attemptsPerClient {
                // The rest of the allowance is being checked right now.
                throw AccountStoreError.lockedOut(until: now.addingTimeInterval(1))
            }
            var delay = Duration.zero
            let spaced = account.failures >= policy.accountWideAttempts
            if spaced {
                delay = try takeTurn(&account, now: now)
                table.set(user, account)
            }
            entry.inFlight += 1
            table.set(clientKey, entry)
            return Ticket(userKey: user, entryKey: clientKey, delay: delay, spaced: spaced)
        }
    }

    /// The account-wide count as the account's stream records it (`auth.login-failed` since its
    /// last successful login, folded into its state): every process and every server on the log
    /// sees it, so failures made elsewhere put this process's checks of the user id in its queue
    /// too. Returns how long the admitted attempt waits for its turn (zero for a known device, for
    /// an attempt queued already, and below the threshold), or throws
    /// ``AccountStoreError/lockedOut(until:)`` when the turn is too far off.
    func shareAccountWide(_ ticket: Ticket, failures: Int, lastFailure: Date?, now: Date) throws -> Duration {
        guard !ticket.isDevice, !ticket.spaced, failures >= policy.accountWideAttempts, let lastFailure,
            now.timeIntervalSince(lastFailure) < AccountStore.seconds(policy.lockDuration)
        else { return .zero }
        return try entries.withLock { table in
            var account = table.peek(ticket.userKey) ?? Entry()
            let delay = try takeTurn(&account, now: now)
            table.set(ticket.userKey, account)
            return delay
        }
    }

    /// The next turn of the account-wide queue: how long to wait for it, or
    /// ``AccountStoreError/lockedOut(until:)`` when it is further off than ``LoginThrottling/maximumWait``.
    private func takeTurn(_ account: inout Entry, now: Date) throws -> Duration {
        let slot = max(now, account.nextSlot ?? now)
        let wait = slot.timeIntervalSince(now)
        if wait > AccountStore.seconds(policy.maximumWait) { throw AccountStoreError.lockedOut(until: slot) }
        account.nextSlot = slot.addingTimeInterval(AccountStore.seconds(policy.slowdownInterval))
        return .milliseconds(Int64((wait * 1_000).rounded(.up)))
    }

    /// Records the outcome of an admitted attempt.
    func finish(_ ticket: Ticket, _ outcome: Outcome, now: Date) {
        entries.withLock { table in
            var entry = table.peek(ticket.entryKey) ?? Entry()
            var account = table.peek(ticket.userKey) ?? Entry()
            entry.inFlight = max(0, entry.inFlight - 1)
            switch outcome {
            case .succeeded:
                entry.failures = 0
                entry.lastFailure = nil
                account = Entry(clearedAt: account.clearedAt)
            case .failed:
                entry.failures += 1
                entry.lastFailure = now
                account.failures += 1
                account.lastFailure = now
            case .abandoned:
                break
            }
            if entry.isIdle { table.remove(ticket.entryKey) } else { table.set(ticket.entryKey, entry) }
            if account.isIdle { table.remove(ticket.userKey) } else { table.set(ticket.userKey, account) }
        }
    }

    /// Forgets every failure of `userKey`, account-wide and of every client and device (after a
    /// completed password reset: whoever holds the new password is the owner). Attempts in flight
    /// keep their count.
    func clear(userKey: String, now: Date) {
        entries.withLock { table in
            table.set(TableKey("user\u{0}" + userKey), Entry(clearedAt: now))
        }
    }

    /// How many rows are kept (user ids, clients and devices with failures or attempts in flight); for tests.
    var trackedEntries: Int { entries.withLock { $0.count } }

    /// An entry whose last failure is older than the lock, or not after `clearedAt`, starts afresh.
    private static func expired(_ entry: Entry, now: Date, lock: TimeInterval, clearedAt: Date? = nil) -> Entry {
        var entry = entry
        if let cleared = entry.clearedAt, now.timeIntervalSince(cleared) >= lock { entry.clearedAt = nil }
        guard let last = entry.lastFailure, now.timeIntervalSince(last) >= lock || clearedAt.map({ last <= $0 }) == true else { return entry }
        entry.failures = 0
        entry.lastFailure = nil
        if let slot = entry.nextSlot, slot <= now { entry.nextSlot = nil }
        return entry
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
