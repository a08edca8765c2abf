//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Foundation
import RemoteAccountService
import SpeziAccount
import SpeziAccountTesting
import Testing

/// The seeds' sign-in flows, headless and end to end: SpeziAccount's `AccountService` API
/// (setup options by section, Sign in with Apple's button, a second factor at login) against a
/// running `accountctl serve`.
@Suite("Spezi sign-in flows against a running server", .timeLimit(.minutes(5)))
struct SpeziSignInFlowTests {
    @Test("Sign in with Apple's headless button: a single sign-on setup option, the nonce hashed, the code kept for revocation")
    func signInWithAppleButton() async throws {
        try await TestOpenIDProvider.with { provider in
            await provider.addES256(kid: "es-1")
            let store = FileManager.default.temporaryDirectory.appendingPathComponent("flow-store-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: store) }
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            let keyFile = store.appendingPathComponent("AuthKey.p8")
            try Data(provider.clientSecretKey.pemRepresentation.utf8).write(to: keyFile)
            let spec = [
                "id=test", "issuer=\(provider.issuer)", "jwks=\(provider.jwksURL)", "client-id=\(provider.clientId)", "nonce=sha256-hex",
                "alg=ES256", "team-id=\(provider.teamId)", "key-id=\(provider.clientSecretKeyId)", "private-key=\(keyFile.path)",
                "token-url=\(provider.tokenURL)", "revoke-url=\(provider.revokeURL)"
            ].joined(separator: ",")
            let server = try ServeProcess(store: store, extra: ["--identity-provider", spec])
            try await server.start()
            let app = try await RemoteHarness(server: server.base, identityProviders: ["test"])
            // The setup screen: password first, then the single sign-on buttons.
            #expect(app.service.setupOptions.map(\.section) == [.primary, .singleSignOn, .singleSignOn])
            #expect(app.service.setupOptions.last?.description == "sign in with test")

            let nonce = SignInWithAppleButton.makeNonce()
            let service = app.service
            let button = SignInWithAppleButton { request in
                request.requestedScopes = ["email"]
                request.nonce = SignInWithAppleButton.hashedNonce(nonce)
            } onCompletion: { result in
                let credential = try result.get()
                try await service.signIn(
                    identityProvider: "test", identityToken: credential.identityToken, nonce: nonce, authorizationCode: credential.authorizationCode)
            }
            // Apple's part: a token carrying the request's (hashed) nonce, and a code.
            try await button.tap { request in
                let token = try await provider.mint(provider.goodClaims(sub: "apple-user-7", nonce: request.nonce), kid: "es-1")
                return SignInWithAppleCredential(identityToken: token, authorizationCode: "c-0007")
            }
            #expect(app.account.signedIn)
            #expect(app.account.details?.isNewUser == true)

            // A user who cancels: the error reaches onCompletion, and nothing is signed in anew.
            try await app.service.logout()
            struct Cancelled: Error {}
            await #expect(throws: Cancelled.self) { try await button.tap { _ in throw Cancelled() } }
            #expect(!app.account.signedIn)
            await app.runtime.shutdown()
            #expect(await server.terminate() == 0)
        }
    }

    @Test("a second factor at login: without a code the server asks for one; with a current code the account signs in")
    func secondFactorLogin() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("flow-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store)
        try await server.start()
        let app = try await RemoteHarness(server: server.base)
        try await app.service.signup(ada())
        let session = try await server.send(
            "POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
        let token = try #require(session.body["token"] as? String)
        let enrolled = try await server.send("POST", "/v1/account/totp", token: token, json: #"{"currentPassword":"correct horse battery"}"#)
        #expect(enrolled.status == 201)
        let secret = try #require(enrolled.body["secret"] as? String)
        let totp = try TOTP(secret: try #require(TOTP.bytes(base32: secret)))
        let confirmed = try await server.send("POST", "/v1/account/totp/confirm", token: token, json: #"{"code":"\#(totp.code(at: Date()))"}"#)
        #expect(confirmed.status == 204)
        try await app.service.logout()

        await #expect {
            try await app.service.login(userId: "ada@example.org", password: "correct horse battery")
        } throws: { error in
            (error as? AccountServerProblem)?.slug == "totp-required"
        }
        #expect(!app.account.signedIn)
        // The confirming code's step is used: the next step's code signs in.
        try await app.service.login(
            userId: "ada@example.org", password: "correct horse battery", secondFactor: totp.code(at: Date().addingTimeInterval(30)))
        #expect(app.account.signedIn)
        await app.runtime.shutdown()
        #expect(await server.terminate() == 0)
    }
}
