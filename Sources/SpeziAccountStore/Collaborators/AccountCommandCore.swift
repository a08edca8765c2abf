//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount

/// What the store's collaborators (``PasswordResets``, ``SignupConfirmations``, ``SessionBook``) may use of the
/// store: the accounts' log, an account's current state, the password hashing threads, the
/// signup's checks and appends, and the wait that makes an answer show its own writes. A
/// collaborator keeps its own settings and sees the store only through this, so what a reset or a
/// confirmation depends on is written in one place.
protocol AccountCommandCore: Sendable {
    /// The accounts' streams and claims.
    var accounts: AccountLog { get }
    /// The store's clock.
    func now() -> Date
    /// The size limits.
    var limits: AccountStoreLimits { get }
    /// How often a command is tried again when its account changed under it.
    var maxConflictRetries: Int { get }
    /// The account's latest state (nil for an unknown account).
    func currentState(of accountId: String) async throws -> AccountState?
    /// A password hash made on the hashing threads.
    func hashPassword(_ password: String) async throws -> String
    /// Returns once the details cache has applied `position`.
    func awaitCache(_ position: UInt64) async throws
    /// Lifts the login locks of a user id (after its password was reset).
    func clearLoginLocks(userId: String)
    /// Checks a signup's details and hashes its password.
    func prepareSignup(_ details: AccountDetails, validating: Bool) async throws -> (userId: String, hash: String, values: EncodedAccountValues)
    /// Appends a signup whose password is hashed already, as the first event of `accountId`.
    func create(
        _ accountId: String, userId: String, passwordHash: String, values: EncodedAccountValues, context: AccountStore.Context
    )
        async throws -> AccountDetails
    /// Appends the upgrade of an anonymous account whose password is hashed already.
    func upgrade(
        _ accountId: String, userId: String, passwordHash: String, values: EncodedAccountValues, context: AccountStore.Context,
        notAnonymous: () -> any Error
    ) async throws -> AccountDetails
    /// Checks a new password against the service's rules.
    func validatePassword(_ password: String) throws
    /// Appends what `decide` makes of the account's current state, at that state's version, again
    /// on a conflict (see `AccountStore.retrying`).
    func retrying(
        _ accountId: String, keyed: KeyedCommand?,
        decide: (AccountState) throws -> (events: [AccountEvent], claims: Set<String>, releases: Set<String>),
        context: () -> AccountStore.Context
    ) async throws -> (position: UInt64?, state: AccountState)
}

extension AccountStore: AccountCommandCore {
    var maxConflictRetries: Int { options.maxConflictRetries }

    func clearLoginLocks(userId: String) {
        throttle.clear(userKey: AccountLog.normalizedUserId(userId), now: options.clock())
    }

    func prepareSignup(_ details: AccountDetails, validating: Bool) async throws -> (userId: String, hash: String, values: EncodedAccountValues) {
        try await prepareSignup(details, validating: validating, refusingTakenUserId: false, unlessHeldBy: nil)
    }

    func validatePassword(_ password: String) throws {
        var proposed = AccountDetails()
        proposed.password = password
        try AccountValidation.validateRules(proposed, service: serviceConfiguration)
    }
}
