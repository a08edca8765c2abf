//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import SpeziAccount

extension AccountStore {
    /// Signs in with a provider identity whose token the caller verified (the server's
    /// `IdentityTokenVerifier`): opens a session for the account the identity is linked to, or
    /// creates an account linked to it.
    ///
    /// A new account's first append holds `account.created` (without a password), then
    /// `account.identity-linked`, `auth.login-succeeded` and `auth.session-started`, and claims the
    /// identity (and the user id, when one is given): two concurrent first sign-ins of one identity
    /// make one account.
    ///
    /// - Parameters:
    ///   - identity: The verified issuer and subject.
    ///   - newUserId: The user id a new account takes (the provider's verified e-mail address), or nil
    ///     for none: the account then signs in with the provider only.
    ///   - validity: How long the session lasts from now.
    ///   - providerToken: A refresh token the provider gave for this sign-in (Sign in with Apple's,
    ///     from the app's authorization code), kept sealed so that the account's deletion or the
    ///     identity's unlinking revokes it (`auth.provider-token-stored`); nil for none.
    ///   - context: Who asks, recorded with the events.
    /// - Returns: The account's details, the new session, and whether the account was created.
    /// - Throws: `AccountServiceError.credentialsTaken` when a new account's user id belongs to
    ///   another account (that owner signs in with the password and links the identity), or
    ///   `AccountOperationError.invalidValue` for a user id the store does not take.
    public func startSession(
        identity: LinkedIdentity, newUserId: String?, validity: Duration, providerToken: String? = nil, context: Context = Context()
    ) async throws -> (details: AccountDetails, session: AccountSession, created: Bool) {
        let secret = BearerSecret.make()
        let expiresAt = options.clock().addingTimeInterval(Self.seconds(validity))
        let started = AccountEvent.sessionStarted(sessionHash: BearerSecret.hash(secret), expiresAtMicros: Self.micros(expiresAt))
        let claim = accounts.identityClaim(issuer: identity.issuer, subject: identity.subject)
        for _ in 0..<2 {
            if let accountId = try await accounts.accountId(forIssuer: identity.issuer, subject: identity.subject) {
                if try await isDisabled(accountId) {
                    throw disabledRefusal
                }
                let outcome = try await retrying(accountId) { state in
                    // Unlinked meanwhile: the identity signs in no one now.
                    guard state.identities.contains(identity) else { throw AccountServiceError.wrongCredentials }
                    let kept = try providerToken.map { try self.providerTokenEvent($0, issuer: identity.issuer, accountId: accountId) }
                    return ([.loginSucceeded, started] + (kept.map { [$0] } ?? []), [], [])
                } context: {
                    context
                }
                if let position = outcome.position { try await awaitCache(position) }
                try await refuseIfDisabled(accountId, after: [started], context: context)
                let details = try details(from: outcome.state)
                return (details, AccountSession(accountId: accountId, token: "\(accountId).\(secret)", expiresAt: expiresAt), false)
            }
            let userId = newUserId ?? ""
            var claims: Set<String> = [claim]
            if !userId.isEmpty {
                try Self.checkUserId(userId)
                let holder = try await accounts.accountId(forUserId: userId)
                let legacyHolder = try await accounts.legacyHolder(ofUserId: userId, other: nil)
                let lookAlike = try await lookAlikeHolder(ofUserId: userId, other: nil)
                if holder != nil || legacyHolder != nil || lookAlike != nil { throw AccountServiceError.credentialsTaken }
                claims.formUnion(accounts.newClaims(forUserId: userId))
            }
            let accountId = options.makeAccountId()
            var events: [AccountEvent] = [
                .accountCreated(userId: userId, passwordHash: nil, isAnonymous: false, values: [:]),
                .identityLinked(issuer: identity.issuer, subject: identity.subject), .loginSucceeded, started
            ]
            if let providerToken { events.append(try providerTokenEvent(providerToken, issuer: identity.issuer, accountId: accountId)) }
            do {
                let result = try await accounts.append(
                    events, to: accountId, expectedVersion: .noStream, metadata: context.metadata, claims: claims, releases: [])
                try await awaitCache(result.positions.upperBound)
            } catch EventLogError.claimTaken {
                // A concurrent first sign-in of the same identity created its account: sign in to it.
                if try await accounts.accountId(forIssuer: identity.issuer, subject: identity.subject) != nil { continue }
                throw AccountServiceError.credentialsTaken
            }
            var state = AccountState(
                accountId: accountId, userId: userId, passwordHash: nil, isAnonymous: false, values: [:], version: 1, at: options.clock())
            state.identities = [identity]
            var details = try details(from: state)
            details.isNewUser = true
            return (details, AccountSession(accountId: accountId, token: "\(accountId).\(secret)", expiresAt: expiresAt), true)
        }
        throw AccountStoreError.tooMuchContention(accountId: "", attempts: 2)
    }

    /// Links a provider identity whose token the caller verified to a signed-in account
    /// (`account.identity-linked`, claiming the identity). Linking an identity the account has
    /// already is no change.
    ///
    /// - Parameters:
    ///   - identity: The verified issuer and subject.
    ///   - accountId: The signed-in account.
    ///   - providerToken: A refresh token the provider gave for this link, kept for revocation as at
    ///     ``startSession(identity:newUserId:validity:providerToken:context:)``; nil for none.
    ///   - context: Who asks, recorded with the event.
    /// - Returns: The account's state after the link.
    /// - Throws: ``AccountStoreError/identityTaken`` when another account holds the identity,
    ///   ``AccountStoreError/identityOfIssuerLinked(issuer:)`` when the account has another identity
    ///   of the same provider, ``AccountStoreError/accountNotFound(_:)``.
    @discardableResult
    public func link(
        _ identity: LinkedIdentity, to accountId: String, providerToken: String? = nil, context: Context = Context()
    ) async throws -> AccountState {
        let kept = try providerToken.map { try providerTokenEvent($0, issuer: identity.issuer, accountId: accountId) }
        let claim = accounts.identityClaim(issuer: identity.issuer, subject: identity.subject)
        do {
            let outcome = try await retrying(accountId) { state in
                if state.identities.contains(identity) { return (kept.map { [$0] } ?? [], [], []) }
                if state.identities.contains(where: { $0.issuer == identity.issuer }) {
                    throw AccountStoreError.identityOfIssuerLinked(issuer: identity.issuer)
                }
                return ([.identityLinked(issuer: identity.issuer, subject: identity.subject)] + (kept.map { [$0] } ?? []), [claim], [])
            } context: {
                context
            }
            if let position = outcome.position { try await awaitCache(position) }
            return outcome.state
        } catch AccountServiceError.credentialsTaken {
            throw AccountStoreError.identityTaken
        }
    }

    /// Unlinks the account's identity of `issuer` (`account.identity-unlinked`, releasing its
    /// claim), unless it is the account's only way in.
    ///
    /// - Parameters:
    ///   - issuer: The provider's issuer.
    ///   - accountId: The signed-in account.
    ///   - context: Who asks, recorded with the event.
    /// - Returns: The account's state after the unlink.
    /// - Throws: ``AccountStoreError/identityNotLinked(issuer:)``, ``AccountStoreError/lastWayIn``
    ///   when the account has no password and no other identity, ``AccountStoreError/accountNotFound(_:)``.
    @discardableResult
    public func unlinkIdentity(issuer: String, from accountId: String, context: Context = Context()) async throws -> AccountState {
        let outcome = try await retrying(accountId) { state in
            guard let identity = state.identities.first(where: { $0.issuer == issuer }) else {
                throw AccountStoreError.identityNotLinked(issuer: issuer)
            }
            guard state.waysIn > 1 else { throw AccountStoreError.lastWayIn }
            return (
                [.identityUnlinked(issuer: identity.issuer, subject: identity.subject)], [],
                [accounts.identityClaim(issuer: identity.issuer, subject: identity.subject)]
            )
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        return outcome.state
    }

    /// The claims of the account's linked identities: what its deletion releases.
    func identityClaims(of state: AccountState) -> Set<String> {
        Set(state.identities.map { accounts.identityClaim(issuer: $0.issuer, subject: $0.subject) })
    }
}
