//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Crypto
import Foundation
import IdentityTokens
import RemoteAccountService
import SpeziAccountStore
import Testing

/// Sign-in with identity tokens against a real OpenID provider on loopback: real keys, real
/// signatures, real JWKS fetches.
@Suite("Sign in with an identity token")
struct IdentitySignInTests {
    static let nonce = "raw-nonce-5f2b9c"
    /// What an Apple-style token carries: the SHA-256 of the app's nonce, in hex.
    static let hashedNonce = SHA256.hash(data: Array(nonce.utf8)).map { String(format: "%02x", $0) }.joined()

    static func configuration(
        _ provider: TestOpenIDProvider, emailBecomesUserId: Bool = false, refetchInterval: Duration = .seconds(60)
    ) -> AccountServerConfiguration {
        var configuration = AccountServerConfiguration()
        configuration.identityProviders = [
            IdentityProviderConfiguration(
                id: "test", issuer: provider.issuer, jwksURL: provider.jwksURL, clientIds: ["other.client", provider.clientId],
                emailBecomesUserId: emailBecomesUserId, nonce: .sha256Hex)
        ]
        configuration.identityTokenLimits.minimumRefetchInterval = refetchInterval
        configuration.identityTokenLimits.fetchTimeout = .seconds(5)
        return configuration
    }

    static func body(_ token: String, nonce: String? = IdentitySignInTests.nonce, provider: String = "test") -> String {
        let nonceField = nonce.map { #","nonce":"\#($0)""# } ?? ""
        return #"{"provider":"\#(provider)","identityToken":"\#(token)"\#(nonceField)}"#
    }

    @Test("a good token creates an account linked to (iss, sub); the next sign-in finds it, with the keys cached")
    func createsThenFinds() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await provider.addRS256(kid: "rs-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider)) { api, store in
                let es = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "es-1")
                let first = try await api.send(.post, "/v1/sessions/identity", json: Self.body(es))
                #expect(first.status == 201, "\(first.text)")
                let accountId = try #require(first.account?["accountId"] as? String)
                let token = try #require(first.token)
                #expect(try await api.send(.get, "/v1/account", token: token).status == 200)
                #expect(
                    try await eventTypes(store, accountId) == [
                        "account.created", "account.identity-linked", "auth.login-succeeded", "auth.session-started"
                    ])

                let rs = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "rs-1")
                let second = try await api.send(.post, "/v1/sessions/identity", json: Self.body(rs))
                #expect(second.status == 201, "\(second.text)")
                #expect(second.account?["accountId"] as? String == accountId)
                #expect(try await eventTypes(store, accountId).filter { $0 == "account.created" }.count == 1)
                // `Cache-Control: max-age=3600`: one fetch served both.
                #expect(provider.jwksFetches == 1)
            }
        }
    }

    @Test("a new account takes the verified e-mail address as its user id when configured so")
    func emailBecomesUserId() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider, emailBecomesUserId: true)) { api, store in
                var claims = provider.goodClaims(nonce: Self.hashedNonce)
                claims.email = "ada@example.org"
                claims.emailVerified = "true"
                let answer = try await api.send(.post, "/v1/sessions/identity", json: Self.body(try await provider.mint(claims, kid: "es-1")))
                #expect(answer.status == 201, "\(answer.text)")
                #expect(answer.details?["userId"] as? String == "ada@example.org")
                #expect(try await store.accounts.accountId(forUserId: "ada@example.org") == answer.account?["accountId"] as? String)
            }
        }
    }

    @Test("tampered, expired, wrong-audience, wrong-issuer, wrong- or missing-nonce, alg none and oversized tokens are refused")
    func refusals() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider)) { api, store in
                let good = provider.goodClaims(nonce: Self.hashedNonce)
                let now = Int(Date().timeIntervalSince1970)
                var expired = good
                expired.exp = now - 3_600
                expired.iat = now - 7_200
                var wrongAudience = good
                wrongAudience.aud = ["someone.else"]
                var wrongIssuer = good
                wrongIssuer.iss = "https://evil.example"
                var future = good
                future.iat = now + 3_600
                var noNonce = good
                noNonce.nonce = nil

                let signed = try await provider.mint(good, kid: "es-1")
                let parts = signed.split(separator: ".").map(String.init)
                var otherSubject = good
                otherSubject.sub = "someone-else"
                let forgedPayload = TestOpenIDProvider.base64URL(try JSONEncoder().encode(otherSubject))
                let tampered = [parts[0], forgedPayload, parts[2]].joined(separator: ".")

                let cases: [(name: String, body: String, reason: String)] = [
                    ("tampered", Self.body(tampered), "bad-signature"),
                    ("expired", Self.body(try await provider.mint(expired, kid: "es-1")), "expired"),
                    ("wrong audience", Self.body(try await provider.mint(wrongAudience, kid: "es-1")), "wrong-audience"),
                    ("wrong issuer", Self.body(try await provider.mint(wrongIssuer, kid: "es-1")), "wrong-issuer"),
                    ("issued in the future", Self.body(try await provider.mint(future, kid: "es-1")), "not-yet-valid"),
                    ("wrong nonce", Self.body(signed, nonce: "another-nonce"), "nonce-mismatch"),
                    (
                        "raw nonce in the token", Self.body(try await provider.mint(provider.goodClaims(nonce: Self.nonce), kid: "es-1")),
                        "nonce-mismatch"
                    ),
                    ("no nonce in the request", Self.body(signed, nonce: nil), "nonce-missing"),
                    ("no nonce in the token", Self.body(try await provider.mint(noNonce, kid: "es-1")), "nonce-missing"),
                    ("alg none", Self.body(try provider.unsigned(good, kid: "es-1")), "unsupported-algorithm"),
                    ("oversized", Self.body(signed + String(repeating: "A", count: 17 * 1_024)), "too-large")
                ]
                for refused in cases {
                    let answer = try await api.send(.post, "/v1/sessions/identity", json: refused.body)
                    #expect(answer.status == 401, "\(refused.name): \(answer.text)")
                    #expect(answer.problemType == "urn:spezi-account-store:problem:invalid-identity-token", "\(refused.name)")
                    #expect(answer.body["detail"] as? String == refused.reason, "\(refused.name): \(answer.text)")
                }
                // Nothing was created or linked.
                #expect(!(try await store.log.read()).contains { $0.type == "account.created" || $0.type == "account.identity-linked" })
                // The good token still signs in; an unknown provider is 404.
                #expect(try await api.send(.post, "/v1/sessions/identity", json: Self.body(signed)).status == 201)
                let unknown = try await api.send(.post, "/v1/sessions/identity", json: Self.body(signed, provider: "nope"))
                #expect(unknown.status == 404)
                #expect(unknown.problemType == "urn:spezi-account-store:problem:unknown-identity-provider")
            }
        }
    }

    @Test("an unknown kid causes one refetch; a rotated key is found by it")
    func unknownKidAndRotation() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider, refetchInterval: .zero)) { api, _ in
                let good = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "es-1")
                #expect(try await api.send(.post, "/v1/sessions/identity", json: Self.body(good)).status == 201)
                #expect(provider.jwksFetches == 1)

                // A key the provider never published: refused after exactly one refetch.
                await provider.addES256(kid: "es-secret", publish: false)
                let unpublished = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "es-secret")
                let refused = try await api.send(.post, "/v1/sessions/identity", json: Self.body(unpublished))
                #expect(refused.status == 401)
                #expect(refused.body["detail"] as? String == "unknown-key")
                #expect(provider.jwksFetches == 2)

                // Rotation: the provider now publishes only a new RSA key.
                try await provider.addRS256(kid: "rs-2")
                provider.publishOnly(["rs-2"])
                let rotated = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "rs-2")
                let accepted = try await api.send(.post, "/v1/sessions/identity", json: Self.body(rotated))
                #expect(accepted.status == 201, "\(accepted.text)")
                #expect(provider.jwksFetches == 3)
            }
        }
    }

    @Test("a flood of unknown kids costs the provider at most one fetch per interval")
    func unknownKidFlood() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider, refetchInterval: .seconds(60))) { api, _ in
                let good = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "es-1")
                #expect(try await api.send(.post, "/v1/sessions/identity", json: Self.body(good)).status == 201)
                for index in 0..<12 {
                    await provider.addES256(kid: "made-up-\(index)", publish: false)
                    let token = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "made-up-\(index)")
                    let answer = try await api.send(.post, "/v1/sessions/identity", json: Self.body(token))
                    #expect(answer.status == 401)
                    #expect(answer.body["detail"] as? String == "unknown-key")
                }
                // The first fetch, and none within the minimum interval.
                #expect(provider.jwksFetches == 1)
            }
        }
    }

    @Test("identity sign-ins count against the login limits per client")
    func rateLimited() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            var configuration = Self.configuration(provider)
            configuration.rateLimits.loginsPerClient = RateLimit(burst: 3, perMinute: 1)
            try await ServerFixture().withServer(configuration: configuration) { api, _ in
                let good = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "es-1")
                for _ in 0..<3 { #expect(try await api.send(.post, "/v1/sessions/identity", json: Self.body(good)).status == 201) }
                let limited = try await api.send(.post, "/v1/sessions/identity", json: Self.body(good))
                #expect(limited.status == 429)
                #expect(limited.problemType == "urn:spezi-account-store:problem:rate-limited")
            }
        }
    }

    @Test("a second account cannot link an identity already linked; the only way in cannot be unlinked")
    func linkAndUnlink() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            try await ServerFixture().withServer(configuration: Self.configuration(provider)) { api, store in
                let token = try await provider.mint(provider.goodClaims(sub: "shared-sub", nonce: Self.hashedNonce), kid: "es-1")
                let first = try await api.signup("first@example.org")
                let second = try await api.signup("second@example.org")

                let linked = try await api.send(.post, "/v1/account/identities", token: first.token, json: Self.body(token))
                #expect(linked.status == 200, "\(linked.text)")
                #expect((linked.body["identities"] as? [[String: Any]])?.first?["provider"] as? String == "test")
                #expect(try await eventTypes(store, first.accountId).contains("account.identity-linked"))

                let taken = try await api.send(.post, "/v1/account/identities", token: second.token, json: Self.body(token))
                #expect(taken.status == 409)
                #expect(taken.problemType == "urn:spezi-account-store:problem:identity-taken")
                #expect(!(try await eventTypes(store, second.accountId)).contains("account.identity-linked"))

                // The identity now signs in the first account.
                let signIn = try await api.send(.post, "/v1/sessions/identity", json: Self.body(token))
                #expect(signIn.account?["accountId"] as? String == first.accountId)

                // The first account has a password too: unlinking is allowed, and the history shows it.
                #expect(try await api.send(.delete, "/v1/account/identities/test", token: first.token).status == 204)
                #expect(try await eventTypes(store, first.accountId).last == "account.identity-unlinked")
                let notLinked = try await api.send(.delete, "/v1/account/identities/test", token: first.token)
                #expect(notLinked.status == 404)
                #expect(notLinked.problemType == "urn:spezi-account-store:problem:identity-not-linked")

                // An account made by a sign-in has no other way in.
                let onlyWay = try await provider.mint(provider.goodClaims(sub: "only-way", nonce: Self.hashedNonce), kid: "es-1")
                let created = try await api.send(.post, "/v1/sessions/identity", json: Self.body(onlyWay))
                let createdToken = try #require(created.token)
                let createdId = try #require(created.account?["accountId"] as? String)
                let refused = try await api.send(.delete, "/v1/account/identities/test", token: createdToken)
                #expect(refused.status == 409)
                #expect(refused.problemType == "urn:spezi-account-store:problem:last-way-in")
                #expect(!(try await eventTypes(store, createdId)).contains("account.identity-unlinked"))
            }
        }
    }

    @Test("accountctl serve --identity-provider: RemoteAccountService signs in with a token, twice into one account")
    func serveProcessAndRemoteService() async throws {
        try await TestOpenIDProvider.with { provider in
            try await provider.addRS256(kid: "rs-1")
            let store = FileManager.default.temporaryDirectory.appendingPathComponent("identity-store-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: store) }
            let spec = "id=test,issuer=\(provider.issuer),jwks=\(provider.jwksURL),client-id=\(provider.clientId),nonce=sha256-hex,alg=RS256"
            let server = try ServeProcess(store: store, extra: ["--identity-provider", spec])
            try await server.start()
            let app = try await RemoteHarness(server: server.base)
            let token = try await provider.mint(provider.goodClaims(nonce: Self.hashedNonce), kid: "rs-1")
            try await app.service.signIn(identityProvider: "test", identityToken: token, nonce: Self.nonce)
            #expect(app.account.signedIn)
            let accountId = try #require(app.account.details?.accountId)
            try await app.service.logout()
            try await app.service.signIn(identityProvider: "test", identityToken: token, nonce: Self.nonce)
            #expect(app.account.details?.accountId == accountId)
            await #expect(throws: AccountServerProblem.self) {
                try await app.service.signIn(identityProvider: "test", identityToken: token, nonce: "not the nonce")
            }
            await app.runtime.shutdown()
            #expect(await server.terminate() == 0)
        }
    }
}
