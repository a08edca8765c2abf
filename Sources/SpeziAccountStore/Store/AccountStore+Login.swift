//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Projections
import SpeziAccount

extension AccountStore {
    /// Checks a user id and password. Records the outcome (`auth.login-succeeded` or
    /// `auth.login-failed`) in the account's stream and rehashes a password stored with the other
    /// algorithm or weaker parameters than the configured ones (`account.password-rehashed`).
    ///
    /// Every check is counted before the password is hashed (``AccountStoreOptions/loginThrottling``):
    /// a client that failed too often for this user id is locked out of it for a while, and a user
    /// id that failed too often from anywhere is checked at a slower pace. Known and unknown user
    /// ids are counted, checked and answered alike.
    ///
    /// - Parameters:
    ///   - userId: the user id as the user typed it (normalized as signup normalizes it).
    ///   - password: the password to check.
    ///   - secondFactor: A TOTP code or a recovery code, which an account with a confirmed TOTP
    ///     enrolment needs (``enrolTOTP(_:issuer:algorithm:digits:context:)``); ignored otherwise.
    ///     It is used up in the same append as the success (`auth.totp-used`,
    ///     `auth.recovery-code-used`), so it is accepted at most once; a wrong one counts in the
    ///     throttle and as a failed login as a wrong password does.
    ///   - context: who asks; its `client` is what the login throttle counts under.
    /// - Returns: the account's details.
    /// - Throws: `AccountServiceError.wrongCredentials` (for an unknown user id too),
    ///   ``AccountStoreError/lockedOut(until:)``, ``AccountStoreError/overloaded(retryAfter:)``;
    ///   with the right password, ``AccountStoreError/secondFactorRequired`` without a code and
    ///   ``AccountStoreError/invalidSecondFactor`` for a wrong or used one.
    public func login(userId: String, password: String, secondFactor: String? = nil, context: Context = Context()) async throws -> AccountDetails {
        try await login(userId: userId, password: password, secondFactor: secondFactor, context: context, alsoAppend: [])
    }

    /// ``login(userId:password:secondFactor:context:)`` that appends `alsoAppend` after
    /// `auth.login-succeeded`.
    ///
    /// The success is appended at the version whose password hash was checked, so a session
    /// cannot be opened with a password that a change replaced meanwhile (nor with a second
    /// factor's code that another sign-in used meanwhile).
    func login(
        userId: String, password: String, secondFactor: String?, context: Context, alsoAppend: [AccountEvent]
    ) async throws -> AccountDetails {
        try await StoreTracing.withSpan("account.login") { span in
            guard userId.utf8.count <= options.limits.maxUserIdBytes, password.utf8.count <= options.limits.maxPasswordBytes else {
                throw AccountServiceError.wrongCredentials
            }
            let ticket = try throttle.admit(
                userKey: AccountLog.normalizedUserId(userId), client: context.client ?? "", device: context.device, now: options.clock())
            var outcome = LoginThrottle.Outcome.abandoned
            defer { throttle.finish(ticket, outcome, now: options.clock()) }
            if ticket.delay > .zero { try await Task.sleep(for: ticket.delay) }

            guard let accountId = try await accounts.accountId(forUserId: userId), var state = try await currentState(of: accountId),
                !state.isDeleted, var stored = state.passwordHash
            else {
                // The same work as a real check, so that unknown user ids cannot be told apart by timing.
                if options.defences.timingDecoy { _ = try await verifyPassword(password, against: try await timingDecoyHash()) }
                outcome = .failed
                throw AccountServiceError.wrongCredentials
            }
            // Failures recorded by other processes and servers count towards the account-wide queue.
            let turn = try throttle.shareAccountWide(ticket, failures: state.failedLogins, lastFailure: state.lastFailedLogin, now: options.clock())
            if turn > .zero { try await Task.sleep(for: turn) }
            guard try await verifyPassword(password, against: stored) else {
                outcome = .failed
                recordFailedLogin(accountId, context: context)
                throw AccountServiceError.wrongCredentials
            }
            // A disabled account answers the right password as a locked one does (the wrong one as any wrong one).
            if try await isDisabled(accountId) {
                throw disabledRefusal
            }
            // With a confirmed second factor, the password alone is not enough.
            var proof: AccountEvent?
            if let factor = state.secondFactor, factor.isConfirmed {
                guard let secondFactor else { throw AccountStoreError.secondFactorRequired }
                guard let event = try await secondFactorProof(secondFactor, accountId: accountId, factor: factor) else {
                    outcome = .failed
                    recordFailedLogin(accountId, context: context, reason: "wrongSecondFactor")
                    throw AccountStoreError.invalidSecondFactor
                }
                proof = event
            }
            outcome = .succeeded
            await options.defences.afterPasswordCheck?(accountId)
            for _ in 0..<options.maxConflictRetries {
                var events: [AccountEvent] = []
                if try hasher.needsRehash(stored) {
                    events.append(.passwordRehashed(passwordHash: try await hashPassword(password)))
                }
                events.append(.loginSucceeded)
                if let proof { events.append(proof) }
                events += alsoAppend
                events += sessionLimitEvents(for: state, adding: alsoAppend)
                do {
                    let expected: ExpectedVersion = options.defences.loginVersionCheck ? .exact(state.version) : .any
                    let result = try await accounts.append(events, to: accountId, expectedVersion: expected, metadata: context.metadata)
                    try await awaitCache(result.positions.upperBound)
                    try await refuseIfDisabled(accountId, after: events, context: context)
                    // The state kept from the check above and the events after it, not the
                    // details cache's copy: that would open and decode the whole sealed state
                    // (every open session in it) for each sign-in. It is kept for the next one.
                    guard let after = try await currentState(of: accountId), !after.isDeleted else {
                        throw AccountStoreError.accountNotFound(accountId)
                    }
                    return try details(from: after)
                } catch EventLogError.wrongExpectedVersion {
                    // The account changed since its password was checked: a session may only follow
                    // the password it was opened with.
                    guard let current = try await currentState(of: accountId), !current.isDeleted, let hash = current.passwordHash else {
                        outcome = .failed
                        throw AccountServiceError.wrongCredentials
                    }
                    if hash != stored {
                        guard try await verifyPassword(password, against: hash) else {
                            outcome = .failed
                            throw AccountServiceError.wrongCredentials
                        }
                        stored = hash
                    }
                    // A code that another sign-in used meanwhile, or a second factor confirmed meanwhile.
                    if let factor = current.secondFactor, factor.isConfirmed {
                        guard let proof else { throw AccountStoreError.secondFactorRequired }
                        guard Self.proof(proof, holdsFor: factor) else {
                            outcome = .failed
                            throw AccountStoreError.invalidSecondFactor
                        }
                    }
                    state = current
                    try await Task.sleep(for: Self.conflictBackoff(attempt: 0))
                }
            }
            throw AccountStoreError.tooMuchContention(accountId: accountId, attempts: options.maxConflictRetries)

        }
    }

    /// Appends `auth.login-failed` for a wrong password (or, with its `reason`, a wrong second
    /// factor) without making the caller wait for it:
    /// the answer then takes as long as for an unknown user id, which appends nothing. The store
    /// waits for it when it closes; an append that fails is logged.
    func recordFailedLogin(_ accountId: String, context: Context, reason: String = "wrongPassword") {
        let metadata = context.metadata
        let attempts = options.maxConflictRetries
        backgroundWrites.start { [accounts] in
            do {
                // At the account's current version, so that it never lands after a deletion.
                for attempt in 0..<attempts {
                    guard let state = try await accounts.load(accountId), !state.isDeleted else { return }
                    do {
                        try await accounts.append(
                            [.loginFailed(reason: reason)], to: accountId, expectedVersion: .exact(state.version), metadata: metadata)
                        return
                    } catch EventLogError.wrongExpectedVersion {
                        try await Task.sleep(for: Self.conflictBackoff(attempt: attempt))
                    }
                }
                Self.logger.warning("a failed login was not recorded: the account kept changing", metadata: ["account": "\(accountId)"])
            } catch {
                Self.logger.error("a failed login could not be recorded", metadata: ["account": "\(accountId)", "error": "\(error)"])
            }
        }
    }

    /// Waits for the records appended without their callers waiting (failed logins, password reset
    /// requests) that have started so far.
    public func settleBackgroundWrites() async {
        await backgroundWrites.settle()
    }
}

extension AccountStore {
    /// The normalized form of `userId` (``AccountLog/normalizedUserId(_:)``) for keying limits and
    /// locks, or nil when its UTF-8 bytes pass ``AccountStoreLimits/maxUserIdBytes``: the length is
    /// checked on the raw bytes first, so an oversized user id costs no normalization (which can
    /// make a string many times longer) and no memory in any table.
    ///
    /// - Parameter userId: A user id as a client sent it.
    /// - Returns: Its normalized form, or nil for one no account can have.
    package func boundedUserKey(_ userId: String) -> String? {
        guard userId.utf8.count <= options.limits.maxUserIdBytes else { return nil }
        return AccountLog.normalizedUserId(userId)
    }

    /// How many rows the login throttle keeps (user ids, clients and devices); for tests.
    package var throttleEntries: Int { throttle.trackedEntries }

    /// The store's size limits.
    public var limits: AccountStoreLimits { options.limits }
}
