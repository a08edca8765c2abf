//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import Spezi
import SpeziAccount

/// An `AccountService` for apps whose accounts live on an account server (`accountctl serve`):
/// configured like any other service, it signs up, logs in, changes and deletes through the
/// server's JSON API, and keeps `Account.details` current from the server's event stream, so
/// changes made on another device, another server or with `accountctl` reach the app.
///
/// ```swift
/// Configuration {
///     AccountConfiguration(
///         service: RemoteAccountService(server: URL(string: "https://accounts.example.org")!),
///         configuration: [.requires(\.userId), .requires(\.name), .collects(\.dateOfBirth)]
///     )
/// }
/// ```
///
/// The server asks for the current password before a change of user id or password and before a
/// deletion; `currentPassword` supplies it (the counterpart of the seed's re-authentication
/// prompt). Errors the seed names (`wrongCredentials`, `credentialsTaken`, `notSignedIn`) are
/// thrown as `AccountServiceError`; every other refusal as ``AccountServerProblem``.
public actor RemoteAccountService: UserIdPasswordAccountService {
    /// What the service supports: user id and password are required; the server stores any key.
    public nonisolated let configuration: AccountServiceConfiguration
    let client: APIClient
    let currentPassword: @Sendable (SecurityRelatedOperation) async throws -> String?

    @Dependency(Account.self) private var account
    @Dependency(AccountNotifications.self) private var notifications

    @IdentityProvider(section: .primary) private var userIdPassword = UserIdPasswordSetup()
    @IdentityProvider private var anonymousSignup: AnonymousSignupSetup
    @IdentityProvider private var singleSignOn: IdentityTokenSetup

    /// The bearer token of the signed-in session.
    private var token: String?
    /// Follows the event stream of the signed-in account.
    private var followTask: Task<Void, Never>?

    static let logger = Logger(label: "spezi.remote-account-service")

    /// A service talking to the server at `server`.
    ///
    /// - Parameters:
    ///   - server: the server's base URL (`http://127.0.0.1:8080`).
    ///   - transport: how requests travel (AsyncHTTPClient on Linux, URLSession elsewhere).
    ///   - userIdType: the kind of user id.
    ///   - supportsAnonymousSignIn: whether anonymous sign-in is offered as a setup option.
    ///   - identityProviders: the ids of the server's identity providers (`apple`, `google`) offered
    ///     as single sign-on setup options (``signIn(identityProvider:identityToken:nonce:authorizationCode:)``).
    ///   - currentPassword: asked for the current password before credential changes and deletion.
    public init(
        server: URL,
        transport: (any AccountServerTransport)? = nil,
        userIdType: UserIdConfiguration = .emailAddress,
        supportsAnonymousSignIn: Bool = false,
        identityProviders: [String] = [],
        currentPassword: @escaping @Sendable (SecurityRelatedOperation) async throws -> String? = { _ in nil }
    ) {
        self.client = APIClient(base: server, transport: transport ?? defaultTransport())
        self.currentPassword = currentPassword
        self.configuration = AccountServiceConfiguration(supportedKeys: .arbitrary) {
            userIdType
            RequiredAccountKeys {
                \.userId
                \.password
            }
        }
        self._anonymousSignup = IdentityProvider(wrappedValue: AnonymousSignupSetup(), enabled: supportsAnonymousSignIn, section: .singleSignOn)
        self._singleSignOn = IdentityProvider(
            wrappedValue: IdentityTokenSetup(providers: identityProviders), enabled: !identityProviders.isEmpty, section: .singleSignOn)
    }

    /// The keys the app configured, for decoding the server's details.
    private var registry: AccountKeyRegistry {
        AccountKeyRegistry.builtIn.merging(AccountKeyRegistry(account.configuration.keys))
    }

    // MARK: AccountService

    /// Logs in: a session on the server, then the account's details.
    ///
    /// - Parameters:
    ///   - userId: the account's user id.
    ///   - password: its password.
    /// - Throws: `AccountServiceError.wrongCredentials` for an unknown user id or a wrong password,
    ///   ``AccountServerProblem`` for another refusal (a rate limit, a lockout), or the transport's
    ///   error when the server cannot be reached.
    public func login(userId: String, password: String) async throws {
        try await login(userId: userId, password: password, secondFactor: nil)
    }

    /// Logs in an account that has a TOTP second factor: the password and a current code (or a
    /// recovery code).
    ///
    /// - Parameters:
    ///   - userId: the account's user id.
    ///   - password: its password.
    ///   - secondFactor: a TOTP code or a recovery code; nil for an account without a second factor.
    /// - Throws: as ``login(userId:password:)``; for an account with a second factor,
    ///   ``AccountServerProblem`` `totp-required` (401) without a code and `invalid-totp` (403) for a
    ///   wrong or used one.
    public func login(userId: String, password: String, secondFactor: String?) async throws {
        var fields: [String: String?] = ["userId": userId, "password": password]
        if let secondFactor { fields["totp"] = secondFactor }
        let body = try APIClient.json(fields)
        var answer = try await client.call("POST", "/v1/sessions", body: body)
        var tries = 1
        while let position = APIClient.acceptedPosition(answer), tries < 5 {
            // A session was opened, but its token did not come back: once the server shows it,
            // another login opens the one this service keeps (the first expires unused).
            try await client.waitUntilApplied(position)
            answer = try await client.call("POST", "/v1/sessions", body: body)
            tries += 1
        }
        try await signIn(answer)
    }

    /// Signs in with an OpenID Connect identity token (Sign in with Apple, Google, …): the server
    /// verifies it and signs in the account linked to it, creating one at the first sign-in.
    ///
    /// - Parameters:
    ///   - provider: The provider's id in the server's configuration (`apple`).
    ///   - identityToken: The token the provider handed the app.
    ///   - nonce: The nonce the app used, raw (for Sign in with Apple, the one whose SHA-256 it
    ///     handed to Apple).
    ///   - authorizationCode: The authorization code that came with the token, for a server that
    ///     keeps the provider's refresh token to revoke it when the account is deleted; nil for none.
    /// - Throws: ``AccountServerProblem`` for a refused token (`invalid-identity-token`), an unknown
    ///   provider or a rate limit, or the transport's error.
    public func signIn(identityProvider provider: String, identityToken: String, nonce: String?, authorizationCode: String? = nil) async throws {
        var fields: [String: String?] = ["provider": provider, "identityToken": identityToken, "nonce": nonce]
        if let authorizationCode { fields["authorizationCode"] = authorizationCode }
        let body = try APIClient.json(fields)
        var answer = try await client.call("POST", "/v1/sessions/identity", body: body)
        if let position = APIClient.acceptedPosition(answer) {
            // Signed in, the session not shown yet: once the server shows it, sign in again.
            try await client.waitUntilApplied(position)
            answer = try await client.call("POST", "/v1/sessions/identity", body: body)
        }
        try await signIn(answer)
    }

    /// Creates an account and signs it in; upgrades the signed-in anonymous account instead.
    /// Omitted required keys take their `.default` initial value; while a non-anonymous account is
    /// signed in it throws `AccountServiceError.internalError`, as upstream's services do.
    ///
    /// - Parameter signupDetails: the new account's values, with its user id and password.
    /// - Throws: `AccountOperationError` for a missing or invalid value (checked before anything is
    ///   sent), `AccountServiceError.credentialsTaken` for a user id that has an account,
    ///   ``SignupConfirmationPending`` on a server that confirms signups, ``AccountServerProblem`` for
    ///   another refusal, or the transport's error.
    public func signup(_ signupDetails: AccountDetails) async throws {
        if let current = account.details, !current.isAnonymous { throw AccountServiceError.internalError }
        let signupDetails = AccountValidation.applyingInitialValues(to: signupDetails, values: account.configuration, service: configuration)
        try AccountValidation.validateSignup(signupDetails, values: account.configuration, service: configuration)
        let body = try JSONEncoder().encode(SignupBody(details: signupDetails))
        if let current = account.details, current.isAnonymous, let token {
            let answer = try await client.call("POST", "/v1/account/upgrade", token: token, body: body)
            if let position = APIClient.acceptedPosition(answer) {
                // Upgraded, not yet shown: the details come once the server has applied it.
                try await client.waitUntilApplied(position, token: token)
                try await refresh(token: token)
                return
            }
            if answer.status == 202 { throw SignupConfirmationPending() }
            var details = try client.account(from: answer.body, registry: registry)
            details.isNewUser = true
            try await account.supplyUserDetails(details)
            return
        }
        let answer = try await client.keyedCall("POST", "/v1/accounts", body: body)
        if let position = APIClient.acceptedPosition(answer), let password = signupDetails.password {
            let userId = signupDetails.userId
            // The account exists (a retry would be told the user id is taken); its session did not
            // come back: sign in once the server shows the account.
            try await client.waitUntilApplied(position)
            try await login(userId: userId, password: password)
            return
        }
        if answer.status == 202 { throw SignupConfirmationPending() }
        try await signIn(answer)
    }

    /// Completes a signup (or upgrade) on a server that confirms signups, with the token the owner
    /// of the user id received, and signs the account in.
    ///
    /// - Parameter confirmation: the token from the message sent to the user id.
    /// - Throws: ``AccountServerProblem`` for an unknown or expired token, or the transport's error.
    public func confirmSignup(token confirmation: String) async throws {
        let answer = try await client.call("POST", "/v1/accounts/confirm", body: try APIClient.json(["token": confirmation]))
        try await signIn(answer)
    }

    /// Signs in with a new anonymous account.
    ///
    /// - Throws: ``AccountServerProblem`` when the server refuses (for example when it does not allow
    ///   anonymous accounts), or the transport's error.
    public func signInAnonymously() async throws {
        let answer: TransportResponse
        do {
            answer = try await client.keyedCall("POST", "/v1/accounts/anonymous")
        } catch let problem as AccountServerProblem where problem.slug == "idempotency-key-used" {
            // A retry found the account its lost first attempt made, whose session a replay does
            // not hand out: a new anonymous account instead (the other one is never signed in to).
            answer = try await client.keyedCall("POST", "/v1/accounts/anonymous")
        }
        try await signIn(answer)
    }

    /// Asks the server to send a password reset (the same answer whether the user id exists or not).
    ///
    /// - Parameter userId: the user id to send the reset to.
    /// - Throws: ``AccountServerProblem`` when the server refuses (a rate limit), or the transport's
    ///   error; never because the user id has no account.
    public func resetPassword(userId: String) async throws {
        _ = try await client.call("POST", "/v1/password-resets", body: try APIClient.json(["userId": userId]))
    }

    /// Changes the signed-in account's details. A new user id or password needs `currentPassword`;
    /// a new password ends every session on the server and this service takes the new one it gets.
    ///
    /// - Parameter modifications: the values to set and to remove.
    /// - Throws: `AccountServiceError.notSignedIn` without a session, `AccountOperationError` when
    ///   validation refuses the change (before anything is sent), the error of `currentPassword`,
    ///   `AccountServiceError.wrongCredentials` for a wrong current password,
    ///   `AccountServiceError.credentialsTaken` for a user id of another account,
    ///   ``AccountServerProblem`` for another refusal, or the transport's error.
    public func updateAccountDetails(_ modifications: AccountModifications) async throws {
        guard account.details != nil, let token else { throw AccountServiceError.notSignedIn }
        try AccountValidation.validateModifications(modifications, values: account.configuration, service: configuration)
        var password: String?
        if modifications.touches(AccountDetails.__Key_userId.self) {
            password = try await currentPassword(.changeUserId)
        }
        if modifications.touches(AccountDetails.__Key_password.self) {
            password = try await currentPassword(.changePassword)
        }
        let body = try JSONEncoder().encode(
            ModifyBody(set: modifications.modifiedDetails, remove: modifications.removedKeys.map { $0.identifier }, currentPassword: password))
        // A new password ends this session, and its event stream with it: that end is not a
        // sign-out, so the stream stops first and follows the new session afterwards.
        let changesPassword = modifications.touches(AccountDetails.__Key_password.self)
        if changesPassword { stopFollowing() }
        let answer: TransportResponse
        do {
            answer = try await client.keyedCall("PATCH", "/v1/account", token: token, body: body)
        } catch {
            if changesPassword, self.token == token { startFollowing(token: token) }
            throw error
        }
        if let position = APIClient.acceptedPosition(answer) {
            // Changed, not yet shown here: wait, then read the account (a new password ended the
            // session, and its replacement did not come back: sign in with it).
            try await client.waitUntilApplied(position, token: changesPassword ? nil : token)
            let userId = modifications.touches(AccountDetails.__Key_userId.self) ? modifications.modifiedDetails.userId : account.details?.userId
            if changesPassword, let userId, let newPassword = modifications.modifiedDetails.password {
                try await login(userId: userId, password: newPassword)
            } else {
                try await refresh(token: token)
            }
            return
        }
        let object = try APIClient.object(answer.body)
        if let session = object["session"] as? [String: Any], let newToken = session["token"] as? String {
            // The password change ended the old session (and the stream that followed it).
            self.token = newToken
            startFollowing(token: newToken)
        }
        let accountData = try JSONSerialization.data(withJSONObject: object["account"] ?? [:])
        let details = try client.account(from: accountData, registry: registry)
        // The event stream may have brought the same change already: it is reported once.
        try await supplyIfChanged(details)
    }

    /// Ends the session on the server, then disassociates the account.
    ///
    /// - Throws: ``AccountServerProblem`` or the transport's error when the server cannot end the
    ///   session; the details then stay in `Account`, while the session's token is forgotten and its
    ///   event stream stopped.
    public func logout() async throws {
        stopFollowing()
        if let token {
            self.token = nil
            do {
                _ = try await client.call("DELETE", "/v1/sessions/current", token: token)
            } catch AccountServiceError.notSignedIn {
                // Already over on the server.
            }
        }
        await account.removeUserDetails()
    }

    /// Deletes the signed-in account (with the current password, unless it is anonymous):
    /// `deletingAccount`, the deletion on the server, then the disassociation. With nobody
    /// signed in it returns.
    ///
    /// - Throws: `AccountServiceError.notSignedIn` without a session, the error of `currentPassword`,
    ///   the storage provider's error (the account then stays), `AccountServiceError.wrongCredentials`
    ///   for a wrong current password, ``AccountServerProblem`` for another refusal, or the transport's
    ///   error.
    public func delete() async throws {
        guard let details = account.details else { return }
        guard let token else { throw AccountServiceError.notSignedIn }
        let password = details.isAnonymous ? nil : try await currentPassword(.deleteAccount)
        try await notifications.reportEvent(.deletingAccount(details.accountId))
        stopFollowing()
        _ = try await client.keyedCall("DELETE", "/v1/account", token: token, body: try APIClient.json(["currentPassword": password]))
        self.token = nil
        await account.removeUserDetails()
    }

    // MARK: Sessions and the event stream

    /// Takes the session of a signup or login answer, supplies its details, and follows the stream.
    private func signIn(_ answer: TransportResponse) async throws {
        let object = try APIClient.object(answer.body)
        guard let token = object["token"] as? String else { throw AccountServerProblem.unexpected(answer) }
        let accountData = try JSONSerialization.data(withJSONObject: object["account"] ?? [:])
        let details = try client.account(from: accountData, registry: registry)
        self.token = token
        try await account.supplyUserDetails(details)
        startFollowing(token: token)
    }

    private func startFollowing(token: String) {
        followTask?.cancel()
        followTask = Task { [weak self] in
            await self?.follow(token: token)
        }
    }

    private func stopFollowing() {
        followTask?.cancel()
        followTask = nil
    }

    /// Reads the account's event stream while the session lasts: opens it, fetches the details once
    /// (whatever changed before the stream opened), then applies each change as it arrives; after a
    /// dropped connection it resumes with `Last-Event-ID`.
    private func follow(token: String) async {
        var lastEventID: UInt64?
        var failures = 0
        while !Task.isCancelled, self.token == token {
            do {
                let stream = try await client.events(token: token, after: lastEventID)
                if lastEventID == nil { try await refresh(token: token) }
                failures = 0
                for try await event in stream {
                    lastEventID = event.id
                    try await apply(event, token: token)
                }
            } catch is CancellationError {
                return
            } catch AccountServiceError.notSignedIn {
                await sessionEnded(token: token)
                return
            } catch {
                if Task.isCancelled { return }
                failures += 1
                Self.logger.warning("the account's event stream broke; reconnecting", metadata: ["error": "\(error)", "attempt": "\(failures)"])
            }
            // The stream ended or broke: is the session still there?
            do {
                try await refresh(token: token)
            } catch AccountServiceError.notSignedIn {
                await sessionEnded(token: token)
                return
            } catch {
                Self.logger.warning("could not reach the account server", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .milliseconds(min(5_000, 100 << min(failures, 6))))
        }
    }

    /// Supplies the server's details of the signed-in account when they differ from `Account`'s.
    private func refresh(token: String) async throws {
        let answer = try await client.call("GET", "/v1/account", token: token)
        guard self.token == token else { return }
        var details = try client.account(from: answer.body, registry: registry)
        details.isNewUser = false
        try await supplyIfChanged(details)
    }

    private func apply(_ event: ServerSentEvent, token: String) async throws {
        guard self.token == token, let current = account.details else { return }
        switch event.name {
        case "detailsChanged":
            guard let after = event.data["after"] else { return }
            var details = try client.details(from: after, registry: registry)
            details.accountId = current.accountId
            details.isAnonymous = current.isAnonymous && details.userId == current.userId
            try await supplyIfChanged(details)
        case "deletingAccount":
            stopFollowingSoon()
            self.token = nil
            try await notifications.reportEvent(.deletingAccount(current.accountId))
            await account.removeUserDetails()
        default:
            // Logins and logouts of other sessions change nothing here.
            break
        }
    }

    /// The session ended on the server (a logout elsewhere, a password change, expiry): the app
    /// is signed out.
    private func sessionEnded(token: String) async {
        guard self.token == token else { return }
        self.token = nil
        await account.removeUserDetails()
    }

    /// Ends the follow task after the current event (it checks the token).
    private func stopFollowingSoon() {
        followTask = nil
    }

    /// Supplies `details` unless `Account` shows them already (flags aside), so that a change the
    /// app made and the same change arriving on the event stream are reported once.
    private func supplyIfChanged(_ details: AccountDetails) async throws {
        guard let current = account.details else { return }
        var incoming = details
        incoming.isNewUser = current.isNewUser
        incoming.isIncomplete = current.isIncomplete
        incoming.userIdType = current.userIdType
        guard incoming != current else { return }
        incoming.isNewUser = false
        try await account.supplyUserDetails(incoming)
    }
}

extension RemoteAccountService: LifecycleHandler {
    /// The runtime stops: the event stream is closed (the session stays open on the server).
    public func applicationWillTerminate() async {
        stopFollowing()
    }
}
