//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Crypto
import Foundation
import HTTPTypes
import Logging
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import ServiceLifecycle
import SpeziAccountStore
import Synchronization
import Testing

private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Adds the session's bearer token, as a generated client's user writes it (the generator leaves
/// authentication to middleware).
private struct BearerMiddleware: ClientMiddleware {
    final class Token: Sendable {
        let value = Mutex<String?>(nil)
    }

    let token = Token()

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let token = token.value.withLock({ $0 }) { request.headerFields[.authorization] = "Bearer \(token)" }
        return try await next(request, body, baseURL)
    }
}

/// The server as a service that reports its port.
private struct ListeningServer: Service {
    let server: AccountServer
    let ports: AsyncStream<Int>.Continuation

    func run() async throws {
        try await server.run { port in ports.yield(port) }
    }
}

/// The password resets the store delivered.
private final class Deliveries: Sendable {
    let requests = Mutex<[PasswordResetRequest]>([])
}

@Suite("A client generated from openapi.yaml, with the generator's default configuration")
struct GeneratedClientTests {
    @Test("the committed client was generated from the document as it is now")
    func generatedFromThisDocument() throws {
        let document = try Data(contentsOf: repositoryRoot.appendingPathComponent("Sources/AccountServer/openapi.yaml"))
        let digest = SHA256.hash(data: document).map { String(format: "%02x", $0) }.joined()
        let recorded = try String(
            contentsOf: repositoryRoot.appendingPathComponent("Tests/OpenAPIClientTests/Generated/openapi.yaml.sha256"), encoding: .utf8)
        #expect(recorded.trimmingCharacters(in: .whitespacesAndNewlines) == digest, "openapi.yaml changed: run Tools/generate-openapi-client.sh")
    }

    @Test("signup, sign-in, a change, the history, a password reset and deletion, every answer decoded")
    func flows() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generated-client-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let resets = Deliveries()
        var options = AccountStoreOptions()
        options.sync = .relaxed
        options.passwordParameters = .insecureTesting
        options.allowWeakPasswordParameters = true
        options.passwordResetDelivery = { request in resets.requests.withLock { $0.append(request) } }
        let store = try await AccountStore(directory: directory.path, options: options)
        var configuration = AccountServerConfiguration()
        configuration.port = 0
        var logger = Logger(label: "generated-client-test")
        logger.logLevel = .warning
        let server = AccountServer(store: store, configuration: configuration, logger: logger)
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: ListeningServer(server: server, ports: sink))], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let outcome: Result<Void, any Error>
        do {
            try await Self.run(port: port, resets: resets)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await group.triggerGracefulShutdown()
        _ = await running.result
        await store.close()
        try outcome.get()
    }

    private static func run(port: Int, resets: Deliveries) async throws {
        let bearer = BearerMiddleware()
        // The generator's defaults: `Configuration()` (dates as RFC 3339 without fractional seconds).
        let client = Client(
            serverURL: try #require(URL(string: "http://127.0.0.1:\(port)")), configuration: Configuration(),
            transport: AsyncHTTPClientTransport(), middlewares: [bearer])
        let name = Components.Schemas.PersonName(
            value1: .init(givenName: "Ada", familyName: "Lovelace"), value2: .init(value1: .init(givenName: "Ada")))
        let signupDetails = Components.Schemas.SignupDetails(
            value1: .init(), value2: .init(userId: "ada@example.org", password: "correct horse battery", name: name))

        // Signup: a session, its expiry decoded as a date.
        let created = try await client.signup(body: .json(signupDetails)).created.body.json
        #expect(created.account.details.additionalProperties.value["userId"] as? String == "ada@example.org")
        #expect(created.expiresAt > Date())

        // Sign-in with the password.
        let session = try await client.login(body: .json(.init(userId: "ada@example.org", password: "correct horse battery"))).created.body.json
        bearer.token.value.withLock { $0 = session.token }
        #expect(session.account.accountId == created.account.accountId)

        // A change, and the history that shows it.
        var change = Components.Schemas.DetailValues()
        change.genderIdentity = .female
        let changed = try await client.modify(body: .json(.init(set: .init(value1: change)))).ok.body.json
        #expect(changed.account.details.additionalProperties.value["genderIdentity"] as? String == "female")
        let history = try await client.history().ok.body.json
        let types = history.entries.map(\._type)
        #expect(types.first == "account.created")
        #expect(types.contains("account.details-modified"))
        #expect(history.entries.allSatisfy { $0.time <= Date().addingTimeInterval(5) })

        // A password reset: requested, delivered, completed; the new password signs in.
        _ = try await client.requestPasswordReset(body: .json(.init(userId: "ada@example.org"))).accepted
        await Self.eventually { !resets.requests.withLock { $0.isEmpty } }
        let token = try #require(resets.requests.withLock { $0.first?.token })
        _ = try await client.completePasswordReset(
            body: .json(.init(userId: "ada@example.org", token: token, newPassword: "another horse battery"))
        ).noContent
        let renewed = try await client.login(body: .json(.init(userId: "ada@example.org", password: "another horse battery"))).created.body.json
        bearer.token.value.withLock { $0 = renewed.token }

        // A refused request: its problem and its Retry-After / WWW-Authenticate are declared, so readable.
        bearer.token.value.withLock { $0 = "not-a-token" }
        let refused = try await client.details()
        guard case let .unauthorized(problem) = refused else {
            Issue.record("expected 401, got \(refused)")
            return
        }
        #expect(problem.headers.WWW_hyphen_Authenticate == "Bearer")
        bearer.token.value.withLock { $0 = renewed.token }

        // Deletion, with the current password; the session ends with it.
        _ = try await client.deleteAccount(body: .json(.init(currentPassword: "another horse battery"))).noContent
        guard case .unauthorized = try await client.details() else {
            Issue.record("the deleted account's session still works")
            return
        }
    }

    private static func eventually(_ condition: () -> Bool) async {
        for _ in 0..<200 where !condition() {
            try? await Task.sleep(for: .milliseconds(25))
        }
    }
}
