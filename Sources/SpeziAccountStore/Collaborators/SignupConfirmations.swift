//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation
import SpeziAccount

/// Signups that only the owner of the user id can complete: the whole signup travels sealed in the
/// token sent to the user id (``SignupToken``), nothing is logged until it comes back, and a taken
/// user id gets a notice instead. Its own settings are the tokens' validity, the delivery and how
/// account ids are made; the store is reached through ``AccountCommandCore`` only.
/// ``AccountStore/requestSignup(_:context:)``, ``AccountStore/requestUpgrade(_:with:context:)`` and
/// ``AccountStore/confirmSignup(token:context:)`` are its public doors.
struct SignupConfirmations: Sendable {
    let core: any AccountCommandCore
    /// How long a token works.
    let validity: Duration
    /// Where tokens and notices go; nil refuses every request.
    let delivery: (@Sendable (SignupConfirmationMessage) async -> Void)?
    /// Makes the id of a new account.
    let makeAccountId: @Sendable () -> String

    /// Checks the details, hashes the password and delivers the token (or the notice).
    func requestSignup(_ signupDetails: AccountDetails) async throws {
        let key = try tokenKey()
        let signup = try await core.prepareSignup(signupDetails, validating: true)
        let event = AccountEvent.accountCreated(userId: signup.userId, passwordHash: signup.hash, isAnonymous: false, values: signup.values)
        try await deliver(kind: .signup, accountId: makeAccountId(), userId: signup.userId, event: event, key: key)
    }

    /// As ``requestSignup(_:)``, for the upgrade of the anonymous account `accountId`.
    func requestUpgrade(_ accountId: String, with signupDetails: AccountDetails) async throws {
        let key = try tokenKey()
        guard let state = try await core.currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
        guard state.isAnonymous else { throw AccountStoreError.notAnonymous(accountId) }
        let signup = try await core.prepareSignup(signupDetails, validating: true)
        let event = AccountEvent.anonymousAccountUpgraded(userId: signup.userId, passwordHash: signup.hash, values: signup.values)
        try await deliver(kind: .upgrade, accountId: accountId, userId: signup.userId, event: event, key: key)
    }

    /// Appends the signup (or upgrade) a token carries, once, before it expires.
    func confirm(token: String, context: AccountStore.Context) async throws -> AccountDetails {
        let key = try tokenKey()
        guard let signup = SignupToken.open(token, with: key), AccountState.micros(core.now()) < signup.expiresAtMicros else {
            throw AccountStoreError.invalidSignupToken
        }
        switch (signup.kind, signup.event) {
        case let (.signup, .accountCreated(userId, hash?, false, values)):
            // Used: its account exists, or existed (a deleted account's key is gone, so the
            // append below could not even seal its values).
            if let version = try await core.accounts.log.streamVersion(signup.accountId), version > 0 {
                throw AccountStoreError.invalidSignupToken
            }
            do {
                return try await core.create(signup.accountId, userId: userId, passwordHash: hash, values: values, context: context)
            } catch EventLogError.wrongExpectedVersion {
                throw AccountStoreError.invalidSignupToken
            }
        case let (.upgrade, .anonymousAccountUpgraded(userId, hash?, values)):
            do {
                return try await core.upgrade(signup.accountId, userId: userId, passwordHash: hash, values: values, context: context) {
                    AccountStoreError.invalidSignupToken
                }
            } catch AccountStoreError.accountNotFound {
                throw AccountStoreError.invalidSignupToken
            }
        default:
            throw AccountStoreError.invalidSignupToken
        }
    }

    /// Seals and delivers the confirmation of a free user id, or the notice for a taken one.
    private func deliver(kind: SignupToken.Kind, accountId: String, userId: String, event: AccountEvent, key: SymmetricKey) async throws {
        guard let delivery else { throw AccountStoreError.signupConfirmationUnavailable("no delivery is configured") }
        if try await core.accounts.accountId(forUserId: userId) != nil {
            await delivery(.alreadyRegistered(userId: userId))
            return
        }
        let expiresAt = core.now().addingTimeInterval(Double(validity.components.seconds))
        let token = try SignupToken(kind: kind, accountId: accountId, expiresAtMicros: AccountState.micros(expiresAt), event: event)
            .sealed(with: key)
        await delivery(.confirm(userId: userId, token: token, expiresAt: expiresAt))
    }

    /// The key that seals signup tokens, derived from the vault's claim secret.
    private func tokenKey() throws -> SymmetricKey {
        guard delivery != nil else {
            throw AccountStoreError.signupConfirmationUnavailable("no delivery is configured (AccountStoreOptions.signupConfirmationDelivery)")
        }
        guard let vault = core.accounts.vault else {
            throw AccountStoreError.signupConfirmationUnavailable("the store has no key vault (AccountStoreOptions.cryptoShredding is off)")
        }
        return SignupToken.key(claimSecret: vault.claimSecret)
    }
}
