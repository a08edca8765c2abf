//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import RemoteAccountService
import Spezi
import SpeziAccount
import SpeziAccountStore
import Synchronization
import Testing

/// A transport that delivers every write to the server and then loses its answer, once per
/// request (as a connection cut after the server committed): the service must learn the outcome
/// by sending the write again with its `Idempotency-Key`.
private final class LosingTransport: AccountServerTransport, Sendable {
    let inner = HTTPClientTransport()
    let lost = Mutex<[String]>([])
    /// The Idempotency-Key of every write sent, in order.
    let keys = Mutex<[String]>([])

    struct LostAnswer: Error {}

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await inner.send(request)
        guard request.method != "GET", let key = request.headers["Idempotency-Key"] else { return response }
        keys.withLock { $0.append(key) }
        let first = lost.withLock { lost in
            guard !lost.contains(key) else { return false }
            lost.append(key)
            return true
        }
        if first { throw LostAnswer() }
        return response
    }

    func stream(_ request: TransportRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>) {
        try await inner.stream(request)
    }
}

@Suite("RemoteAccountService: a write whose answer was lost is sent again with its key", .timeLimit(.minutes(5)))
struct RemoteRetryTests {
    @Test("signup, a password change and the deletion each lose their first answer: each is done once, and the app ends as it would have")
    func lostAnswers() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("remote-retry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store)
        try await server.start()
        let transport = LosingTransport()
        let password = Mutex("correct horse battery")
        let service = RemoteAccountService(
            server: try #require(URL(string: server.base)), transport: transport, currentPassword: { _ in password.withLock { $0 } })
        let configuration = AccountConfiguration(service: service, configuration: [.requires(\.userId), .requires(\.password), .requires(\.name)])
        let runtime = SpeziRuntime(configuration: Configuration { configuration })
        try await runtime.boot()

        // Without the retry the signup would be answered 409 (its first attempt took the user id).
        try await service.signup(ada())
        let accountId = try #require(configuration.account.details?.accountId)
        var newPassword = AccountDetails()
        newPassword.password = "another secret 99"
        try await service.updateAccountDetails(try AccountModifications(modifiedDetails: newPassword))
        password.withLock { $0 = "another secret 99" }
        #expect(configuration.account.signedIn)
        try await service.delete()
        #expect(!configuration.account.signedIn)

        // Each write was sent twice with one key: the first answer lost, the second the first's.
        let keys = transport.keys.withLock { $0 }
        #expect(keys.count == 6 && Set(keys).count == 3, "\(keys)")
        await runtime.shutdown()
        #expect(await server.terminate() == 0)

        // The log holds each write once.
        let reopened = try await AccountStore(directory: store.path)
        let types = try await eventTypes(reopened, accountId)
        await reopened.close()
        for type in ["account.created", "account.password-changed", "account.deleted"] {
            #expect(types.filter { $0 == type }.count == 1, "\(type) in \(types)")
        }
    }
}
