//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import TestSupport
import TestTiers
import Testing

@Suite("accountctl serve on a shared PostgreSQL log: two app servers, each with its own folder", .timeLimit(.minutes(5)), .integration)
struct PostgresServeTests {
    @Test("a session opened on one node works on the other; a change through one reaches an app following the other; a logout ends it everywhere")
    func twoNodes() async throws {
        let postgres = try await PostgresServer.start(name: "serve")
        defer { postgres.remove() }
        let folders = (0..<2).map { FileManager.default.temporaryDirectory.appendingPathComponent("serve-node-\($0)-\(UUID().uuidString)") }
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        let log = ["--log", postgres.url(schema: "accounts")]
        let first = try ServeProcess(store: folders[0], extra: log)
        try await first.start()
        let second = try ServeProcess(store: folders[1], extra: log)
        try await second.start()

        // An app signed in through the first node.
        let app = try await RemoteHarness(server: first.base)
        try await app.service.signup(ada())
        let accountId = try #require(app.account.details?.accountId)

        // Another session, on the second node: the first node's session is valid there too.
        let login = try await second.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
        #expect(login.status == 201)
        let other = try #require(login.body["token"] as? String)
        #expect((login.body["account"] as? [String: Any])?["accountId"] as? String == accountId)

        // A change through the second node reaches the app, which follows the first node's stream.
        #expect(try await second.send("PATCH", "/v1/account", token: other, json: #"{"set":{"genderIdentity":"female"}}"#).status == 200)
        #expect(try await eventually { app.account.details?.genderIdentity == .female })

        // The second node's session ends there, and the first node refuses it at once.
        #expect(try await second.send("DELETE", "/v1/sessions/current", token: other).status == 204)
        #expect(try await first.send("GET", "/v1/account", token: other).status == 401)
        #expect(app.account.signedIn)

        await app.runtime.shutdown()
        #expect(await first.terminate() == 0)
        #expect(await second.terminate() == 0)
    }
}
