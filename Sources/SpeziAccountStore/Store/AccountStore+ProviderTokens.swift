//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation

/// A provider token the store owes a revocation: its account was deleted or its identity unlinked.
public struct ProviderTokenRevocation: Sendable, Equatable {
    /// The account the token belonged to.
    public let accountId: String
    /// The provider's issuer.
    public let issuer: String
    /// The token (a refresh token), in the clear: send it to the provider's revocation endpoint.
    public let token: String
}

extension AccountStore {
    /// The event that keeps a provider's refresh token for an account, sealed under a key of the
    /// store's vault (``AccountEvent/providerTokenStored(issuer:token:)``).
    ///
    /// - Parameters:
    ///   - token: The refresh token, in the clear.
    ///   - issuer: The provider's issuer.
    ///   - accountId: The account.
    /// - Returns: The event to append.
    /// - Throws: A sealing error (none is expected).
    func providerTokenEvent(_ token: String, issuer: String, accountId: String) throws -> AccountEvent {
        guard let key = providerTokenKey else { return .providerTokenStored(issuer: issuer, token: "plain:" + token) }
        let sealed = try Sealing.seal(Array(token.utf8), key: key, accountId: accountId, label: "provider-token " + issuer)
        return .providerTokenStored(issuer: issuer, token: "v1:" + Data(sealed).base64EncodedString())
    }

    /// The key provider tokens are sealed under: derived from the vault's claim secret, so that it
    /// outlives each account's own key (a token must be revoked after its account's key is gone).
    var providerTokenKey: SymmetricKey? {
        guard let vault = accounts.vault else { return nil }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: vault.claimSecret, info: Array("spezi-account-store provider tokens".utf8), outputByteCount: 32)
    }

    /// Keeps a provider's refresh token for an identity of the account (`auth.provider-token-stored`),
    /// replacing the one kept for that issuer, so that deleting the account or unlinking the
    /// identity revokes it (``pendingProviderTokenRevocations(limit:)``).
    ///
    /// - Parameters:
    ///   - token: The refresh token, in the clear (sealed before it is written).
    ///   - issuer: The provider's issuer; the account must have an identity of it.
    ///   - accountId: The account.
    ///   - context: Who asks, recorded with the event.
    /// - Throws: ``AccountStoreError/identityNotLinked(issuer:)``, ``AccountStoreError/accountNotFound(_:)``.
    public func storeProviderToken(_ token: String, issuer: String, for accountId: String, context: Context = Context()) async throws {
        let event = try providerTokenEvent(token, issuer: issuer, accountId: accountId)
        let outcome = try await retrying(accountId) { state in
            guard state.identities.contains(where: { $0.issuer == issuer }) else { throw AccountStoreError.identityNotLinked(issuer: issuer) }
            return ([event], [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await projections.waitUntilApplied(ProviderTokenProjection.projectionName, position: position) }
    }

    /// The provider tokens owed a revocation (their account was deleted or their identity
    /// unlinked, and no `auth.provider-token-revoked` followed), in account order, once the
    /// revocation table has applied the log as it is now.
    ///
    /// - Parameter limit: At most this many.
    /// - Returns: The revocations owed, with each token in the clear.
    /// - Throws: Errors of the projection store; a token that does not open is logged and left out.
    public func pendingProviderTokenRevocations(limit: Int = 100) async throws -> [ProviderTokenRevocation] {
        let head = try await log.lastPosition()
        try await projections.waitUntilApplied(ProviderTokenProjection.projectionName, position: head)
        let entries: [(String, String, String)] = try projections.read(ProviderTokenProjection.projectionName) { state in
            var entries: [(String, String, String)] = []
            try state.forEach("pending") { key, value in
                guard let zero = key.firstIndex(of: 0) else { return true }
                entries.append(
                    (
                        String(decoding: key[..<zero], as: UTF8.self), String(decoding: key[(zero + 1)...], as: UTF8.self),
                        String(decoding: value, as: UTF8.self)
                    ))
                return entries.count < limit
            }
            return entries
        }
        return entries.compactMap { accountId, issuer, stored in
            do {
                return ProviderTokenRevocation(
                    accountId: accountId, issuer: issuer, token: try openProviderToken(stored, issuer: issuer, accountId: accountId))
            } catch {
                Self.logger.error(
                    "a provider token owed a revocation does not open",
                    metadata: ["account": "\(accountId)", "issuer": "\(issuer)", "error": "\(error)"])
                return nil
            }
        }
    }

    /// Records that the provider revoked a token (`auth.provider-token-revoked`), which takes it off
    /// ``pendingProviderTokenRevocations(limit:)``. Appended whatever the account's state (it is
    /// usually deleted).
    ///
    /// - Parameters:
    ///   - revocation: The revocation done.
    ///   - context: Who did it, recorded with the event.
    /// - Throws: Errors of the log.
    public func recordProviderTokenRevoked(_ revocation: ProviderTokenRevocation, context: Context = Context()) async throws {
        let result = try await accounts.append(
            [.providerTokenRevoked(issuer: revocation.issuer)], to: revocation.accountId, expectedVersion: .any, metadata: context.metadata)
        try await projections.waitUntilApplied(ProviderTokenProjection.projectionName, position: result.positions.upperBound)
    }

    private func openProviderToken(_ stored: String, issuer: String, accountId: String) throws -> String {
        if stored.hasPrefix("plain:") { return String(stored.dropFirst(6)) }
        guard stored.hasPrefix("v1:"), let sealed = Data(base64Encoded: String(stored.dropFirst(3))), let key = providerTokenKey else {
            throw Sealing.Failure.damaged("not a sealed provider token, or no vault to open it")
        }
        let bytes = try sealed.withUnsafeBytes { try Sealing.open($0, key: key, accountId: accountId, label: "provider-token " + issuer) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
