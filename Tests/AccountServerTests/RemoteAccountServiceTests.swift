//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import RemoteAccountService
import Spezi
import SpeziAccount
import Synchronization
import Testing

/// A booted Spezi runtime whose account service is a ``RemoteAccountService`` on `server`.
struct RemoteHarness {
    let runtime: SpeziRuntime
    let account: Account
    let notifications: AccountNotifications
    let service: RemoteAccountService

    init(server: String, password: String? = "correct horse battery", identityProviders: [String] = []) async throws {
        let service = RemoteAccountService(
            server: try #require(URL(string: server)), supportsAnonymousSignIn: true, identityProviders: identityProviders,
            currentPassword: { _ in password })
        let configuration = AccountConfiguration(
            service: service, configuration: [.requires(\.userId), .requires(\.password), .requires(\.name), .collects(\.genderIdentity)])
        runtime = SpeziRuntime(configuration: Configuration { configuration })
        try await runtime.boot()
        account = configuration.account
        notifications = configuration.notifications
        self.service = service
    }
}

func ada(_ userId: String = "ada@example.org", password: String = "correct horse battery") -> AccountDetails {
    var details = AccountDetails()
    details.userId = userId
    details.password = password
    details.name = PersonNameComponents(givenName: "Ada", familyName: "Lovelace")
    return details
}

/// A short description of a notification, for comparing sequences.
func describe(_ event: AccountNotifications.Event) -> String {
    switch event {
    case .deletingAccount: "deletingAccount"
    case let .associatedAccount(details): "associatedAccount(\(details.name?.givenName ?? "-"))"
    case let .detailsChanged(old, new):
        "detailsChanged(\(old.genderIdentity?.rawValue ?? "-") -> \(new.genderIdentity?.rawValue ?? "-"))"
    case .disassociatingAccount: "disassociatingAccount"
    }
}

/// Waits (up to 20 s) until `condition` holds.
func eventually(_ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<400 {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return condition()
}

// The limit guards against a hang, not for speed: alone the suite takes seconds, but in the whole
// suite on two cores every one of its tests once took 120 s waiting for the CPU (as did tests
// around it), and a 2-minute limit cancelled one of them.
@Suite("RemoteAccountService against a running accountctl serve", .timeLimit(.minutes(5)))
struct RemoteAccountServiceTests {
    @Test("the seed's flow: signup, modify, delete; the notifications in the seed's order; the server's log has each step")
    func seedFlow() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("remote-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store)
        try await server.start()
        let app = try await RemoteHarness(server: server.base)
        let live = app.notifications.events

        try await app.service.signup(ada())
        let accountId = try #require(app.account.details?.accountId)
        #expect(app.account.details?.isNewUser == true)
        #expect(app.account.details?.userId == "ada@example.org")
        #expect(app.account.details?.password == nil)

        var change = AccountDetails()
        change.genderIdentity = .female
        try await app.service.updateAccountDetails(try AccountModifications(modifiedDetails: change))
        #expect(app.account.details?.genderIdentity == .female)

        // The server's own record of it, through a session of its own.
        let login = try await server.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
        let token = try #require(login.body["token"] as? String)
        let history = try await server.send("GET", "/v1/account/history", token: token)
        let types = (history.body["entries"] as? [[String: Any]])?.compactMap { $0["type"] as? String }
        // The login records its client beside its session (`auth.session-client`).
        #expect(
            types == [
                "account.created", "auth.session-started", "account.details-modified", "auth.login-succeeded", "auth.session-started",
                "auth.session-client"
            ])

        try await app.service.delete()
        #expect(!app.account.signedIn)
        #expect(try await server.send("GET", "/v1/account", token: token).status == 401)
        let expected = ["associatedAccount(Ada)", "detailsChanged(- -> female)", "deletingAccount", "disassociatingAccount"]
        #expect(try await firstNotifications(4, of: live).map(describe) == expected)
        #expect(accountId.count == 36)
        await app.runtime.shutdown()
        #expect(await server.terminate() == 0)
    }

    @Test("changes made elsewhere (another session, through another server) reach Account.details through the event stream")
    func changesFromElsewhere() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("remote-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let first = try ServeProcess(store: store)
        try await first.start()
        let second = try ServeProcess(store: store)
        try await second.start()
        let app = try await RemoteHarness(server: first.base)
        try await app.service.signup(ada())
        let live = app.notifications.events

        let login = try await second.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
        let other = try #require(login.body["token"] as? String)
        #expect(try await second.send("PATCH", "/v1/account", token: other, json: #"{"set":{"genderIdentity":"female"}}"#).status == 200)
        #expect(try await eventually { app.account.details?.genderIdentity == .female })
        #expect(try await firstNotifications(1, of: live).map(describe) == ["detailsChanged(- -> female)"])

        // A deletion elsewhere signs the app out, with the seed's two notifications.
        let deleted = try await second.send("DELETE", "/v1/account", token: other, json: #"{"currentPassword":"correct horse battery"}"#)
        #expect(deleted.status == 204)
        #expect(try await eventually { !app.account.signedIn })
        let signedOut = try await firstNotifications(2, of: live).map(describe)
        #expect(signedOut == ["deletingAccount", "disassociatingAccount"])
        await app.runtime.shutdown()
        #expect(await first.terminate() == 0)
        #expect(await second.terminate() == 0)
    }

    @Test("errors: wrong credentials and a taken user id as the seed's errors; a new password keeps the app signed in")
    func errorsAndPasswordChange() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("remote-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store)
        try await server.start()
        let app = try await RemoteHarness(server: server.base)
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await app.service.login(userId: "nobody@example.org", password: "whatever it is")
        }
        try await app.service.signup(ada())
        try await app.service.logout()
        #expect(!app.account.signedIn)
        await #expect(throws: AccountServiceError.credentialsTaken) { try await app.service.signup(ada()) }
        try await app.service.login(userId: "ada@example.org", password: "correct horse battery")

        var newPassword = AccountDetails()
        newPassword.password = "another secret 99"
        try await app.service.updateAccountDetails(try AccountModifications(modifiedDetails: newPassword))
        var change = AccountDetails()
        change.genderIdentity = .male
        try await app.service.updateAccountDetails(try AccountModifications(modifiedDetails: change))
        #expect(app.account.signedIn && app.account.details?.genderIdentity == .male)

        let refused = try await RemoteHarness(server: server.base, password: nil)
        try await refused.service.login(userId: "ada@example.org", password: "another secret 99")
        await #expect(throws: AccountServerProblem.self) { try await refused.service.delete() }
        await app.runtime.shutdown()
        await refused.runtime.shutdown()
        #expect(await server.terminate() == 0)
    }

    @Test("a server that confirms signups: signup throws SignupConfirmationPending; the outbox's token signs the app in")
    func confirmedSignup() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("remote-store-\(UUID().uuidString)")
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: outbox)
        }
        let server = try ServeProcess(store: store, extra: ["--signup-outbox", outbox.path])
        try await server.start()
        let app = try await RemoteHarness(server: server.base)
        await #expect(throws: SignupConfirmationPending.self) { try await app.service.signup(ada()) }
        #expect(app.account.details == nil)
        let line = try #require(try String(contentsOf: outbox, encoding: .utf8).split(separator: "\n").first)
        let token = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])?["token"])
        try await app.service.confirmSignup(token: token)
        #expect(app.account.details?.userId == "ada@example.org" && app.account.details?.name?.givenName == "Ada")
        await app.runtime.shutdown()
        #expect(await server.terminate() == 0)
    }
}

/// The first `count` notifications of a stream, or those that came within 20 s.
func firstNotifications(_ count: Int, of stream: AsyncStream<AccountNotifications.Event>) async throws -> [AccountNotifications.Event] {
    final class Collected: Sendable {
        let events = Mutex<[AccountNotifications.Event]>([])
    }
    let collected = Collected()
    await withTaskGroup(of: Void.self) { group in
        group.addTask {
            for await element in stream {
                let done = collected.events.withLock { collected in
                    collected.append(element)
                    return collected.count == count
                }
                if done { return }
            }
        }
        group.addTask { try? await Task.sleep(for: .seconds(20)) }
        await group.next()
        group.cancelAll()
    }
    return collected.events.withLock { $0 }
}
