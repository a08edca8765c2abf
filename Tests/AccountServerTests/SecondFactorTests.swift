//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import AccountServer
import Foundation
import SpeziAccountStore
import Testing

/// The TOTP second factor over real HTTP: enrolment, confirmation, sign-in with a code or a
/// recovery code (each accepted once), removal, and wrong codes in the login throttle.
@Suite("TOTP second factor: enrolment, sign-in, replay, recovery codes, removal, throttle", .timeLimit(.minutes(2)))
struct SecondFactorTests {
    static let userId = "ada@example.org"
    static let password = "correct horse battery"
    static let problem = "urn:spezi-account-store:problem:"

    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    static func now(_ server: LiveServer) -> Date { server.fixture.now.withLock { $0 } }

    static func login(_ server: LiveServer, password: String = password, totp: String?, source: String? = nil) async throws -> RawHTTP.Answer {
        let code = totp.map { #","totp":"\#($0)""# } ?? ""
        return try await RawHTTP.send(
            port: server.port, source: source, "POST", "/v1/sessions", json: #"{"userId":"\#(userId)","password":"\#(password)"\#(code)}"#)
    }

    /// Enrols and confirms a TOTP for the signed-in account; returns its generator and recovery codes.
    static func enrol(_ server: LiveServer, token: String) async throws -> (totp: TOTP, recoveryCodes: [String]) {
        let enrolled = try await RawHTTP.send(
            port: server.port, "POST", "/v1/account/totp", json: #"{"currentPassword":"\#(password)"}"#, headers: bearer(token))
        try #require(enrolled.status == 201, "\(enrolled.body)")
        let secret = try #require(enrolled.json["secret"] as? String)
        let codes = try #require(enrolled.json["recoveryCodes"] as? [String])
        let totp = try TOTP(secret: try #require(TOTP.bytes(base32: secret)))
        let confirmed = try await RawHTTP.send(
            port: server.port, "POST", "/v1/account/totp/confirm", json: #"{"code":"\#(totp.code(at: now(server)))"}"#, headers: bearer(token))
        try #require(confirmed.status == 204, "\(confirmed.body)")
        return (totp, codes)
    }

    @Test("enrolment answers the secret, URI and 10 recovery codes; sign-in then needs a code, accepted once")
    func signInWithCode() async throws {
        try await LiveServer.with(realHashing: false) { server in
            let (token, accountId) = try await server.signup(Self.userId)
            // The password is checked before anything is enrolled.
            let refused = try await RawHTTP.send(
                port: server.port, "POST", "/v1/account/totp", json: #"{"currentPassword":"wrong password"}"#, headers: Self.bearer(token))
            #expect(refused.status == 401, "\(refused.body)")
            let enrolled = try await RawHTTP.send(
                port: server.port, "POST", "/v1/account/totp", json: #"{"currentPassword":"\#(Self.password)"}"#, headers: Self.bearer(token))
            #expect(enrolled.status == 201, "\(enrolled.body)")
            let secret = try #require(enrolled.json["secret"] as? String)
            let uri = try #require(enrolled.json["uri"] as? String)
            #expect(uri.hasPrefix("otpauth://totp/SpeziAccountStore:ada@example.org?secret=\(secret)&issuer=SpeziAccountStore"), "\(uri)")
            #expect(uri.hasSuffix("&algorithm=SHA1&digits=6&period=30"))
            let codes = try #require(enrolled.json["recoveryCodes"] as? [String])
            #expect(codes.count == 10 && Set(codes).count == 10)
            let totp = try TOTP(secret: try #require(TOTP.bytes(base32: secret)))
            #expect(totp.secret.count == 20)

            // Not confirmed yet: the password alone signs in; a wrong first code confirms nothing.
            #expect(try await Self.login(server, totp: nil).status == 201)
            let wrong = String(totp.code(at: Self.now(server)).reversed())
            let notConfirmed = try await RawHTTP.send(
                port: server.port, "POST", "/v1/account/totp/confirm",
                json: #"{"code":"\#(wrong == totp.code(at: Self.now(server)) ? "000000" : wrong)"}"#,
                headers: Self.bearer(token))
            #expect(notConfirmed.status == 403 && notConfirmed.problemType == Self.problem + "invalid-totp", "\(notConfirmed.body)")
            let code = totp.code(at: Self.now(server))
            let confirmed = try await RawHTTP.send(
                port: server.port, "POST", "/v1/account/totp/confirm", json: #"{"code":"\#(code)"}"#, headers: Self.bearer(token))
            #expect(confirmed.status == 204, "\(confirmed.body)")

            // Confirmed: the password alone is not enough.
            let required = try await Self.login(server, totp: nil)
            #expect(required.status == 401 && required.problemType == Self.problem + "totp-required", "\(required.body)")
            // The confirming code is used up: refused at sign-in.
            let replayedConfirmation = try await Self.login(server, totp: code)
            #expect(replayedConfirmation.status == 403 && replayedConfirmation.problemType == Self.problem + "invalid-totp")
            // The next period's code opens a session, once.
            server.fixture.advance(seconds: 30)
            let next = totp.code(at: Self.now(server))
            let signedIn = try await Self.login(server, totp: next)
            #expect(signedIn.status == 201, "\(signedIn.body)")
            let session = try #require(signedIn.json["token"] as? String)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/account", headers: Self.bearer(session)).status == 200)
            let replayed = try await Self.login(server, totp: next)
            #expect(replayed.status == 403 && replayed.problemType == Self.problem + "invalid-totp", "\(replayed.body)")
            // A right code with a wrong password is a wrong password.
            server.fixture.advance(seconds: 30)
            let wrongPassword = try await Self.login(server, password: "not the password", totp: totp.code(at: Self.now(server)))
            #expect(wrongPassword.status == 401 && wrongPassword.problemType == Self.problem + "wrong-credentials")
            // A confirmed factor is not enrolled over.
            let again = try await RawHTTP.send(
                port: server.port, "POST", "/v1/account/totp", json: #"{"currentPassword":"\#(Self.password)"}"#, headers: Self.bearer(token))
            #expect(again.status == 409 && again.problemType == Self.problem + "totp-enrolled", "\(again.body)")

            let types = try await server.store.history(of: accountId).map(\.type)
            #expect(types.filter { $0 == "auth.totp-enrolled" }.count == 1)
            #expect(types.contains("auth.totp-confirmed") && types.filter { $0 == "auth.totp-used" }.count == 1)
        }
    }

    @Test("a recovery code signs in once; step-up and removal need a code; deleting the account shreds the secret")
    func recoveryCodesAndRemoval() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.stepUpsPerAccount = RateLimit(burst: 100, perMinute: 100)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            let (token, accountId) = try await server.signup(Self.userId)
            let (totp, codes) = try await Self.enrol(server, token: token)
            #expect(try await Self.login(server, totp: codes[0]).status == 201)
            let reused = try await Self.login(server, totp: codes[0])
            #expect(reused.status == 403 && reused.problemType == Self.problem + "invalid-totp", "\(reused.body)")
            // Typed in lower case without the dash, a code is the same code.
            #expect(try await Self.login(server, totp: codes[1].lowercased().replacingOccurrences(of: "-", with: "")).status == 201)
            #expect(try await Self.login(server, totp: "AAAAA-AAAAA").status == 403)

            // Deleting the account needs a code too.
            let stepUp = try await RawHTTP.send(
                port: server.port, "DELETE", "/v1/account", json: #"{"currentPassword":"\#(Self.password)"}"#, headers: Self.bearer(token))
            #expect(stepUp.status == 401 && stepUp.problemType == Self.problem + "totp-required", "\(stepUp.body)")

            // Removal: a wrong code is refused, a recovery code removes it.
            let wrong = try await RawHTTP.send(
                port: server.port, "DELETE", "/v1/account/totp", json: #"{"code":"ZZZZZ-ZZZZZ"}"#, headers: Self.bearer(token))
            #expect(wrong.status == 403, "\(wrong.body)")
            let removed = try await RawHTTP.send(
                port: server.port, "DELETE", "/v1/account/totp", json: #"{"code":"\#(codes[2])"}"#, headers: Self.bearer(token))
            #expect(removed.status == 204, "\(removed.body)")
            #expect(try await Self.login(server, totp: nil).status == 201)
            let gone = try await RawHTTP.send(
                port: server.port, "DELETE", "/v1/account/totp", json: #"{"code":"\#(totp.code(at: Self.now(server)))"}"#, headers: Self.bearer(token)
            )
            #expect(gone.status == 409 && gone.problemType == Self.problem + "totp-not-enrolled", "\(gone.body)")
            let history = try await server.store.history(of: accountId)
            #expect(history.filter { $0.type == "auth.recovery-code-used" }.count == 3)
            #expect(history.contains { $0.type == "auth.totp-removed" })

            // The secret is sealed under the account's key: once the account is deleted, unreadable.
            try await server.store.delete(accountId)
            let enrolments = try await server.store.history(of: accountId).filter { $0.type == "auth.totp-enrolled" }
            #expect(enrolments.count == 1 && enrolments.allSatisfy { $0.isRedacted })
        }
    }

    @Test("wrong codes count against the login throttle as wrong passwords do")
    func wrongCodesAreThrottled() async throws {
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.loginsPerAccount = RateLimit(burst: 1_000, perMinute: 1_000)
        var tweaks = StoreTweaks()
        tweaks.loginThrottling = LoginThrottling(
            attemptsPerClient: 3, lockDuration: .seconds(300), accountWideAttempts: 1_000, slowdownInterval: .seconds(1), maximumWait: .seconds(1))
        try await LiveServer.with(configuration: configuration, realHashing: false, tweaks: tweaks) { server in
            let (token, accountId) = try await server.signup(Self.userId, source: "127.0.0.2")
            let (totp, _) = try await Self.enrol(server, token: token)
            server.fixture.advance(seconds: 30)
            let right = totp.code(at: Self.now(server))
            let wrong = right == "000000" ? "111111" : "000000"
            for _ in 0..<3 {
                let answer = try await Self.login(server, totp: wrong, source: "127.0.0.5")
                #expect(answer.status == 403, "\(answer.body)")
            }
            // That client is locked out, the right code notwithstanding; another client signs in.
            let locked = try await Self.login(server, totp: right, source: "127.0.0.5")
            #expect(locked.status == 429 && locked.problemType == Self.problem + "locked-out", "\(locked.body)")
            #expect(try await Self.login(server, totp: right, source: "127.0.0.6").status == 201)
            // The wrong codes are failed logins in the account's history.
            await server.store.settleBackgroundWrites()
            let failures = try await server.store.history(of: accountId).filter { $0.type == "auth.login-failed" }
            #expect(failures.filter { $0.note == "wrongSecondFactor" }.count == 3, "\(failures.map(\.note))")
        }
    }
}
