//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import IdentityTokens
import SpeziAccountStore
import Testing

/// Apple's rule that deleting an account revokes its tokens, against a provider on loopback whose
/// token and revocation endpoints check the server's signed client secret.
@Suite("Provider tokens revoked when accounts are deleted")
struct ProviderTokenRevocationTests {
    static func configuration(_ provider: TestOpenIDProvider) -> AccountServerConfiguration {
        var configuration = IdentitySignInTests.configuration(provider)
        configuration.identityProviders[0].tokenEndpoints = ProviderTokenEndpoints(
            tokenURL: provider.tokenURL, revokeURL: provider.revokeURL, clientId: provider.clientId,
            clientSecret: .signedJWT(
                teamId: provider.teamId, keyId: provider.clientSecretKeyId, privateKeyPEM: provider.clientSecretKey.pemRepresentation))
        configuration.providerTokenRevocationInterval = .milliseconds(50)
        configuration.providerTokenRevocationMaximumBackoff = .milliseconds(400)
        return configuration
    }

    static func body(_ token: String, code: String) -> String {
        #"{"provider":"test","identityToken":"\#(token)","nonce":"\#(IdentitySignInTests.nonce)","authorizationCode":"\#(code)"}"#
    }

    @Test("a sign-in's authorization code becomes a kept refresh token; deleting the account revokes it, after the endpoint was down")
    func revokedAfterOutage() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            provider.revokeFailuresLeft.withLock { $0 = 3 }
            try await ServerFixture().withServer(configuration: Self.configuration(provider)) { api, store in
                let token = try await provider.mint(provider.goodClaims(nonce: IdentitySignInTests.hashedNonce), kid: "es-1")
                let signedIn = try await api.send(.post, "/v1/sessions/identity", json: Self.body(token, code: "c-0001"))
                #expect(signedIn.status == 201, "\(signedIn.text)")
                let accountId = try #require(signedIn.account?["accountId"] as? String)
                #expect(try await eventTypes(store, accountId).contains("auth.provider-token-stored"))
                // The refresh token is sealed in the log, not in the clear.
                #expect(!(try await store.log.read()).contains { String(decoding: $0.payload, as: UTF8.self).contains("r-0001") })
                #expect(try await store.pendingProviderTokenRevocations().isEmpty)

                try await store.delete(accountId)
                #expect(
                    try await eventually(seconds: 20) {
                        try await eventTypes(store, accountId).last == "auth.provider-token-revoked"
                    })
                #expect(provider.revoked.withLock { $0 } == ["r-0001"])
                // Three answers of 503 first: each tried again, none recorded as done.
                #expect(provider.revokeCalls.load(ordering: .relaxed) == 4)
                #expect(try await eventTypes(store, accountId).filter { $0 == "auth.provider-token-revoked" }.count == 1)
                #expect(try await store.pendingProviderTokenRevocations().isEmpty)
            }
        }
    }

    @Test("a refused code signs in without a token; unlinking a linked identity revokes its token")
    func unlinkRevokes() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider)) { api, store in
                let token = try await provider.mint(provider.goodClaims(sub: "sub-2", nonce: IdentitySignInTests.hashedNonce), kid: "es-1")
                // The provider refuses this code: the sign-in still works, and nothing is kept.
                let refused = try await api.send(.post, "/v1/sessions/identity", json: Self.body(token, code: "bad-code"))
                #expect(refused.status == 201, "\(refused.text)")
                let onlyId = try #require(refused.account?["accountId"] as? String)
                #expect(!(try await eventTypes(store, onlyId)).contains("auth.provider-token-stored"))

                let account = try await api.signup("linker@example.org")
                let other = try await provider.mint(provider.goodClaims(sub: "sub-3", nonce: IdentitySignInTests.hashedNonce), kid: "es-1")
                let linked = try await api.send(.post, "/v1/account/identities", token: account.token, json: Self.body(other, code: "c-0003"))
                #expect(linked.status == 200, "\(linked.text)")
                #expect(try await eventTypes(store, account.accountId).contains("auth.provider-token-stored"))
                #expect(try await api.send(.delete, "/v1/account/identities/test", token: account.token).status == 204)
                #expect(
                    try await eventually(seconds: 20) {
                        try await eventTypes(store, account.accountId).last == "auth.provider-token-revoked"
                    })
                #expect(provider.revoked.withLock { $0 } == ["r-0003"])
            }
        }
    }

    @Test(
        "a provider that sends its answer's head and then stalls costs the timeout, not more: token calls and key sets",
        .timeLimit(.minutes(1)))
    func stallingProvider() async throws {
        try await TestOpenIDProvider.with { provider in
            let endpoints = ProviderTokenEndpoints(
                tokenURL: provider.stallingURL, revokeURL: provider.stallingURL, clientId: provider.clientId, clientSecret: .fixed("secret"))
            let client = ProviderTokenClient(endpoints: endpoints, issuer: provider.issuer, timeout: .milliseconds(300))
            var started = ContinuousClock.now
            await #expect(throws: ProviderTokenError.timedOut) { try await client.revoke(refreshToken: "r-1") }
            await #expect(throws: ProviderTokenError.timedOut) { _ = try await client.exchange(authorizationCode: "c-1") }
            // HTTP's own timeout covers the head only: without the deadline each call waits for the whole trickle.
            #expect(ContinuousClock.now - started < .seconds(20))

            var limits = IdentityTokenLimits()
            limits.fetchTimeout = .milliseconds(300)
            let verifier = IdentityTokenVerifier(
                providers: [
                    IdentityProviderConfiguration(id: "stall", issuer: provider.issuer, jwksURL: provider.stallingURL, clientIds: [provider.clientId])
                ],
                limits: limits)
            await provider.addES256(kid: "es-1")
            let token = try await provider.mint(provider.goodClaims(nonce: "n"), kid: "es-1")
            started = ContinuousClock.now
            await #expect {
                try await verifier.verify(token, provider: "stall", nonce: "n")
            } throws: { error in
                if case IdentityTokenError.keysUnavailable = error { return true }
                return false
            }
            #expect(ContinuousClock.now - started < .seconds(20))
        }
    }
}
