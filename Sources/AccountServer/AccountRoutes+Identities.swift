//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird
import IdentityTokens
import SpeziAccountStore

/// `POST /v1/sessions/identity` and `POST /v1/account/identities`: a provider's identity token, the
/// provider's id and the nonce the app sent to the provider (raw; for Apple, the one whose SHA-256
/// it handed to Apple), and the authorization code that came with the token, for a provider whose
/// refresh tokens the server keeps to revoke them later.
struct IdentityTokenBody: Decodable {
    let provider: String
    let identityToken: String
    let nonce: String?
    let authorizationCode: String?
}

/// The identities linked to an account, by provider.
struct IdentitiesBody: Encodable {
    struct Linked: Encodable {
        let provider: String?
        let issuer: String
    }

    let identities: [Linked]

    init(_ state: AccountState, providers: [IdentityProviderConfiguration]) {
        identities = state.identities.sorted().map { identity in
            Linked(provider: providers.first { $0.issuer == identity.issuer }?.id, issuer: identity.issuer)
        }
    }
}

extension AccountRoutes {
    /// Signs in with an identity token: the account linked to its `(iss, sub)`, or a new one
    /// linked to it (with the verified e-mail address as its user id when the provider's
    /// configuration says so). Answered as a password sign-in is: 201 with a session.
    func identitySignIn(_ request: inout Request, client: String) async throws -> Response {
        let body = try await body(&request, as: IdentityTokenBody.self)
        let (identity, provider) = try await verify(body)
        try limit("login-identity", identityKey(identity), configuration.rateLimits.loginsPerAccount)
        let newUserId = provider.emailBecomesUserId && identity.emailVerified ? identity.email : nil
        let refreshToken = await exchange(body.authorizationCode, provider: provider)
        let (details, session, created) = try await store.startSession(
            identity: LinkedIdentity(issuer: identity.issuer, subject: identity.subject), newUserId: newUserId,
            validity: configuration.sessionValidity, providerToken: refreshToken, context: context(request, client: client))
        logger.info("identity sign-in", metadata: ["provider": "\(provider.id)", "created": "\(created)"])
        return try Self.json(SessionBody(session, details: details), status: .created)
    }

    /// Links the identity of a token to the signed-in account.
    func linkIdentity(_ request: inout Request, _ session: SignedInAccount, client: String) async throws -> Response {
        let body = try await body(&request, as: IdentityTokenBody.self)
        let (identity, provider) = try await verify(body)
        let refreshToken = await exchange(body.authorizationCode, provider: provider)
        let state = try await store.link(
            LinkedIdentity(issuer: identity.issuer, subject: identity.subject), to: session.state.accountId, providerToken: refreshToken,
            context: context(request, actor: session.state.accountId, client: client))
        return try Self.json(IdentitiesBody(state, providers: configuration.identityProviders))
    }

    /// Unlinks the signed-in account's identity of the provider in the path, unless it is the
    /// account's only way in.
    func unlinkIdentity(_ request: Request, _ session: SignedInAccount) async throws -> Response {
        guard let name = request.uri.path.split(separator: "/").last, let provider = identityTokens.providers[String(name)] else {
            throw Self.unknownProvider
        }
        try await store.unlinkIdentity(
            issuer: provider.issuer, from: session.state.accountId, context: context(request, actor: session.state.accountId))
        return Response(status: .noContent)
    }

    /// Verifies the body's token with its provider's configuration; a refusal is 401
    /// `invalid-identity-token` (its reason in the detail and the log), a provider whose keys
    /// cannot be fetched 503.
    private func verify(_ body: IdentityTokenBody) async throws -> (VerifiedIdentity, IdentityProviderConfiguration) {
        guard let provider = identityTokens.providers[body.provider] else { throw Self.unknownProvider }
        do {
            return (try await identityTokens.verify(body.identityToken, provider: provider.id, nonce: body.nonce), provider)
        } catch let error as IdentityTokenError {
            switch error {
            case .unknownProvider:
                throw Self.unknownProvider
            case let .keysUnavailable(reason):
                logger.error("identity provider keys unavailable", metadata: ["provider": "\(provider.id)", "reason": "\(reason)"])
                throw Problem(
                    "identity-provider-unavailable", .serviceUnavailable, "The identity provider's keys cannot be fetched; try again.",
                    retryAfter: 5)
            default:
                logger.notice("identity token refused", metadata: ["provider": "\(provider.id)", "reason": "\(error)"])
                throw Problem("invalid-identity-token", .unauthorized, "The identity token is not valid.", detail: Self.reason(error))
            }
        }
    }

    /// The refresh token an authorization code grants, when the provider has token endpoints and
    /// the app sent a code (verified with the identity token first). A failed exchange does not
    /// fail the sign-in: it is logged, and there is no token to revoke later.
    private func exchange(_ code: String?, provider: IdentityProviderConfiguration) async -> String? {
        guard let code, !code.isEmpty, code.utf8.count <= 4_096, let client = providerTokens[provider.id] else { return nil }
        do {
            let token = try await client.exchange(authorizationCode: code)
            if token == nil { logger.warning("the provider granted no refresh token", metadata: ["provider": "\(provider.id)"]) }
            return token
        } catch {
            logger.error("an authorization code could not be exchanged", metadata: ["provider": "\(provider.id)", "error": "\(error)"])
            return nil
        }
    }

    private static let unknownProvider = Problem("unknown-identity-provider", .notFound, "No identity provider of that name is configured.")

    /// The limit key of an identity: a digest, so the table holds no one's subject.
    private func identityKey(_ identity: VerifiedIdentity) -> String {
        store.accounts.identityClaim(issuer: identity.issuer, subject: identity.subject)
    }

    /// A short reason for the problem's detail (the header, the signature or a claim).
    private static func reason(_ error: IdentityTokenError) -> String {
        switch error {
        case .tooLarge: "too-large"
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported-algorithm"
        case .unknownKey: "unknown-key"
        case .badSignature: "bad-signature"
        case .wrongIssuer: "wrong-issuer"
        case .wrongAudience: "wrong-audience"
        case .expired: "expired"
        case .notYetValid: "not-yet-valid"
        case .nonceMissing: "nonce-missing"
        case .nonceMismatch: "nonce-mismatch"
        case .missingClaim: "missing-claim"
        case .unknownProvider, .keysUnavailable: "unavailable"
        }
    }
}
