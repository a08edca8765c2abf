//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Logging
import Projections
import SpeziAccount

extension AccountStore {
    /// Loads the account, lets `decide` turn its state into events, and appends them expecting the
    /// version it decided on; when another writer appended first, loads and decides again after a
    /// short random pause (growing with each attempt, so that many writers on one account spread out
    /// instead of colliding again). Returns the position of the last event appended (nil when
    /// `decide` had nothing to append) and the account's state right after the append.
    ///
    /// With `keyed` and a context that carries an idempotency key, the events' ids are derived
    /// from the key, and a retry whose first attempt committed returns that attempt's first
    /// position and the account's current state (deleted, too) without deciding again.
    func retrying(
        _ accountId: String, keyed: KeyedCommand? = nil,
        decide: (AccountState) throws -> (events: [AccountEvent], claims: Set<String>, releases: Set<String>),
        context: () -> Context
    ) async throws -> (position: UInt64?, state: AccountState) {
        try await StoreTracing.withSpan("account.change") { span in
            span?.attributes["account.id"] = accountId
            if let keyed, let replayed = try await committedAttempt(keyed, accountId: accountId, context: context()) { return replayed }
            let attempts = options.maxConflictRetries
            for attempt in 0..<attempts {
                guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
                let decision = try decide(state)
                guard !decision.events.isEmpty else { return (nil, state) }
                // A session started past the account's limit ends the ones that expire first.
                let events = decision.events + sessionLimitEvents(for: state, adding: decision.events)
                try checkChangeBudget(events, of: state)
                await options.defences.beforeChangeAppend?(accountId)
                do {
                    var eventIDs: [UUID]?
                    if let keyed { eventIDs = try await keyedEventIDs(keyed, accountId: accountId, context: context(), count: events.count) }
                    let result = try await accounts.append(
                        events, to: accountId, expectedVersion: .exact(state.version),
                        metadata: context().metadata, claims: decision.claims, releases: decision.releases, eventIDs: eventIDs)
                    if result.wasDuplicate, let keyed, let replayed = try await committedAttempt(keyed, accountId: accountId, context: context()) {
                        return replayed
                    }
                    var after = state
                    let now = options.clock()
                    for (offset, event) in events.enumerated() {
                        after.apply(event, version: state.version + UInt64(offset) + 1, at: now)
                    }
                    // A deleted account's personal data does not stay in memory (crypto-shredding).
                    if after.isDeleted { recentStates.forget(accountId) }
                    return (result.positions.upperBound, after)
                } catch EventLogError.wrongExpectedVersion {
                    try await Task.sleep(for: Self.conflictBackoff(attempt: attempt))
                    continue
                } catch let error as KeyVaultError {
                    // `makeKey` refuses an account whose key is destroyed, which happens only after its
                    // deletion is in the log and the cache: a deletion came between the load and the
                    // append, which would have been a conflict. Load again, as for one (and find the
                    // account gone). Any other vault failure is the caller's to see.
                    guard case .notAVault = error, let vault = accounts.vault, try await vault.offPool({ try $0.isShredded(accountId) }) else {
                        throw error
                    }
                    try await Task.sleep(for: Self.conflictBackoff(attempt: attempt))
                    continue
                } catch EventLogError.claimTaken {
                    throw AccountServiceError.credentialsTaken
                } catch EventLogError.duplicateEventID where keyed != nil {
                    // A concurrent retry with the same key committed first (deciding other events).
                    if let replayed = try await committedAttempt(keyed!, accountId: accountId, context: context()) { return replayed }
                    throw AccountStoreError.tooMuchContention(accountId: accountId, attempts: attempt + 1)
                }
            }
            throw AccountStoreError.tooMuchContention(accountId: accountId, attempts: attempts)

        }
    }

    /// Refuses events that would take the account past ``AccountStoreLimits/changesPerAccountPerHour``
    /// or ``AccountStoreLimits/changeBytesPerAccountPerDay`` (``AccountStoreError/changeLimitReached(limit:until:)``).
    /// A keyed retry of a change that committed is answered before this check.
    func checkChangeBudget(_ events: [AccountEvent], of state: AccountState) throws {
        let sizes = events.compactMap(ChangeBudget.changeBytes(of:))
        guard !sizes.isEmpty else { return }
        let limits = options.limits
        if let refusal = state.changeBudget.refusal(
            changes: sizes.count, bytes: sizes.reduce(0, +), at: options.clock(), changesPerHour: limits.changesPerAccountPerHour,
            bytesPerDay: limits.changeBytesPerAccountPerDay)
        {
            throw AccountStoreError.changeLimitReached(limit: refusal.limit, until: refusal.retryAt)
        }
    }

    /// The first position of a keyed command's committed attempt and the account's state now;
    /// nil when the log has no such attempt (or the context no key).
    private func committedAttempt(
        _ command: KeyedCommand, accountId: String, context: Context
    ) async throws -> (position: UInt64?, state: AccountState)? {
        guard let first = try await keyedEventIDs(command, accountId: accountId, context: context, count: 1)?.first,
            let position = try await keyedPosition(of: first, in: accountId)
        else { return nil }
        guard let state = try await currentState(of: accountId) else { throw AccountStoreError.accountNotFound(accountId) }
        return (position, state)
    }

    /// Refuses a user id the store does not take for a new account or a changed user id
    /// (``UserIdNormalization/refusal(of:)``) with `AccountOperationError.invalidValue`.
    static func checkUserId(_ userId: String) throws {
        if let refusal = UserIdNormalization.refusal(of: userId) {
            throw AccountOperationError.invalidValue(key: AccountDetails.__Key_userId.identifier, rule: refusal.rawValue, message: refusal.message)
        }
    }

    /// A random pause before retry `attempt`: up to 50 µs doubled per attempt, at most 20 ms.
    static func conflictBackoff(attempt: Int) -> Duration {
        let ceiling = min(50 << min(attempt, 10), 20_000)
        return .microseconds(Int.random(in: 1...ceiling))
    }
}
