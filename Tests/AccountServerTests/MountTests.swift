//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import Hummingbird
import HummingbirdAuth
import HummingbirdTesting
import Logging
import SpeziAccountStore
import Testing

/// A team's own request context, with the signed-in account as its identity.
private struct TeamContext: AuthRequestContext, RequestContext {
    var coreContext: CoreRequestContextStorage
    var identity: SignedInAccount?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
    }
}

@Suite("The account API mounted in a team's own Hummingbird application")
struct MountTests {
    @Test("under a prefix: signup, details and the limits work there; the team's routes see the signed-in account; nothing at the root")
    func mountedUnderPrefix() async throws {
        let fixture = ServerFixture()
        let store = try await fixture.openStore()
        var logger = Logger(label: "mount-test")
        logger.logLevel = .warning
        var configuration = AccountServerConfiguration()
        configuration.rateLimits.signupsPerClient = RateLimit(burst: 3, perMinute: 1)
        let router = Router(context: TeamContext.self)
        router.get("/") { _, _ in "the team's page" }
        try AccountServer(store: store, configuration: configuration, logger: logger).mount(on: router, at: "/accounts")
        router.group("/notes")
            .add(middleware: AccountSessionAuthenticator<TeamContext>(store: store))
            .get { _, context -> String in
                guard let account = context.identity else { throw HTTPError(.unauthorized) }
                return "notes of \(account.accountId)"
            }
        do {
            try await Application(router: router).test(.router) { client in
                let api = APIClient(client: client)
                #expect(try await api.send(.get, "/").text == "the team's page")
                let signup = try await api.send(
                    .post, "/accounts/v1/accounts",
                    json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada","familyName":"Lovelace"}}"#)
                #expect(signup.status == 201)
                let token = try #require(signup.token)
                let accountId = try #require(signup.account?["accountId"] as? String)

                let details = try await api.send(.get, "/accounts/v1/account", token: token)
                #expect(details.status == 200 && details.details?["userId"] as? String == "ada@example.org")
                // Problem details come from the API's own middleware.
                let anonymous = try await api.send(.get, "/accounts/v1/account")
                #expect(anonymous.status == 401 && anonymous.problemType == "urn:spezi-account-store:problem:invalid-session")
                let malformed = try await api.send(.post, "/accounts/v1/accounts", json: "{")
                #expect(malformed.status == 400 && malformed.headers[.contentType] == "application/problem+json")
                // The per-client signup limit counts here too (burst 3: the signup, the malformed one, one more, then 429).
                #expect(try await api.send(.post, "/accounts/v1/accounts", json: #"{"userId":"b@example.org"}"#).status != 429)
                let limited = try await api.send(.post, "/accounts/v1/accounts", json: #"{"userId":"c@example.org"}"#)
                #expect(limited.status == 429 && limited.headers[.retryAfter] != nil)

                // The team's own route knows who is signed in.
                #expect(try await api.send(.get, "/notes", token: token).text == "notes of \(accountId)")
                #expect(try await api.send(.get, "/notes").status == 401)
                #expect(try await api.send(.get, "/notes", token: token + "x").status == 401)
                // After logout the token signs in nobody, on the team's routes too.
                #expect(try await api.send(.delete, "/accounts/v1/sessions/current", token: token).status == 204)
                #expect(try await api.send(.get, "/notes", token: token).status == 401)
                // Nothing is mounted at the root, and the console is not mounted at all.
                #expect(try await api.send(.get, "/v1/account", token: token).status == 404)
                #expect(try await api.send(.get, "/accounts/admin/api/whoami").status == 404)
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        #expect(try await eventTypesAfterReopen(fixture).contains("auth.logged-out"))
    }

    private func eventTypesAfterReopen(_ fixture: ServerFixture) async throws -> [String] {
        let store = try await fixture.openStore()
        defer { try? FileManager.default.removeItem(at: fixture.directory) }
        let records = try await store.logReader.read(from: 1, limit: 100)
        await store.close()
        return records.map(\.type)
    }
}
