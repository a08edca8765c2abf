//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import SpeziAccount
import SpeziAccountStore
import Synchronization
import Testing

/// A store in a temporary folder with cheap hashing, a clock the test moves, and the password
/// resets it delivered; the server runs on it through HummingbirdTesting (no socket).
final class ServerFixture: Sendable {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("account-server-\(UUID().uuidString)")
    let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    let resets = Mutex<[PasswordResetRequest]>([])
    let signups = Mutex<[SignupConfirmationMessage]>([])

    func advance(seconds: Double) {
        now.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    func openStore(
        values: AccountValueConfiguration = .default, _ change: (inout AccountStoreOptions) -> Void = { _ in }
    ) async throws -> AccountStore {
        var options = options()
        change(&options)
        return try await AccountStore(directory: directory.path, values: values, options: options)
    }

    /// Cheap hashing, the fixture's clock, resets and signup messages kept.
    func options() -> AccountStoreOptions {
        var options = AccountStoreOptions()
        options.sync = .relaxed
        options.passwordParameters = .insecureTesting
        options.allowWeakPasswordParameters = true
        options.clock = { [self] in self.now.withLock { $0 } }
        options.passwordResetDelivery = { [self] request in self.resets.withLock { $0.append(request) } }
        options.signupConfirmationDelivery = { [self] message in self.signups.withLock { $0.append(message) } }
        return options
    }

    /// Runs `body` against a server on a fresh store; closes the store and removes the folder after.
    func withServer(
        configuration: AccountServerConfiguration = AccountServerConfiguration(),
        values: AccountValueConfiguration = .default,
        storeOptions: (inout AccountStoreOptions) -> Void = { _ in },
        _ body: @Sendable (APIClient, AccountStore) async throws -> Void
    ) async throws {
        let store = try await openStore(values: values, storeOptions)
        // The access log stays out of the test output.
        var logger = Logger(label: "account-server-test")
        logger.logLevel = .warning
        let server = AccountServer(store: store, configuration: configuration, logger: logger)
        do {
            try await server.makeApplication().test(.router) { client in
                try await body(APIClient(client: client), store)
            }
        } catch {
            await store.close()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        await store.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// One answer: status, headers and the body as JSON (an object, or empty).
struct APIResponse {
    let status: Int
    let headers: HTTPFields
    let body: [String: Any]
    let text: String

    var problemType: String? { body["type"] as? String }
    var token: String? { body["token"] as? String }
    var account: [String: Any]? { body["account"] as? [String: Any] }
    var details: [String: Any]? { (body["details"] as? [String: Any]) ?? (account?["details"] as? [String: Any]) }
}

/// Sends requests with JSON bodies and bearer tokens.
struct APIClient: Sendable {
    let client: any TestClientProtocol

    func send(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: String? = nil, headers extra: HTTPFields = [:]
    ) async throws -> APIResponse {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        if json != nil { headers[.contentType] = "application/json" }
        let response = try await client.execute(uri: path, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
        let text = String(buffer: response.body)
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        return APIResponse(status: Int(response.status.code), headers: response.headers, body: object, text: text)
    }

    /// Signs up `userId` with a name; returns the session token and the account id.
    func signup(_ userId: String, password: String = "correct horse battery") async throws -> (token: String, accountId: String) {
        let answer = try await send(
            .post, "/v1/accounts",
            json: #"{"userId":"\#(userId)","password":"\#(password)","name":{"givenName":"Ada","familyName":"Lovelace"}}"#)
        try #require(answer.status == 201, "\(answer.text)")
        return (try #require(answer.token), try #require(answer.account?["accountId"] as? String))
    }
}

/// The event types of an account's stream, in order.
func eventTypes(_ store: AccountStore, _ accountId: String) async throws -> [String] {
    try await store.log.readStream(accountId, from: 1, limit: 1_000).map(\.type)
}
