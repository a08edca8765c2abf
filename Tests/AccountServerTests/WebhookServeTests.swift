//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// Webhooks across real `accountctl serve` processes: two servers on one log, the one delivering
/// killed with SIGKILL mid-stream; the other takes over and nothing is lost.
@Suite("Webhooks across server processes, one killed", .timeLimit(.minutes(5)), .integration)
struct WebhookServeTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case lmdb, postgres
        var testDescription: String { rawValue == "lmdb" ? "one LMDB store" : "a shared PostgreSQL log" }
    }

    static let credential = "grace:a long admin password"

    @Test(
        "one server delivers at a time; killed mid-stream, the other takes over; every event arrives at least once, in log order",
        arguments: Backend.allCases)
    func killedHolder(backend: Backend) async throws {
        let postgres = backend == .postgres ? try await PostgresServer.start(name: "webhooks") : nil
        defer { postgres?.remove() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-serve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let credentialFile = scratch.appendingPathComponent("admin")
        try (Self.credential + "\n").write(to: credentialFile, atomically: true, encoding: .utf8)

        try await TestWebhookReceiver.with { receiver in
            // After five, each delivery is held for 1.5 s at the receiver: the kill lands mid-stream
            // however slow the machine.
            receiver.hold.withLock { $0 = (5, .milliseconds(1_500)) }
            var servers: [ServeProcess] = []
            for node in ["node-a", "node-b"] {
                let store = backend == .lmdb ? scratch.appendingPathComponent("store") : scratch.appendingPathComponent("folder-\(node)")
                let log = postgres.map { ["--log", $0.url(schema: "accounts")] } ?? []
                let server = try ServeProcess(
                    store: store,
                    extra: log + [
                        "--admin-credential-file", credentialFile.path, "--node-id", node, "--webhook-interval-seconds", "0.05",
                        "--webhook-lease-seconds", "1", "--webhook-timeout-seconds", "2"
                    ])
                try await server.start()
                servers.append(server)
            }
            let added = try await servers[0].send(
                "POST", "/admin/api/webhooks", json: #"{"url":"\#(receiver.url)","eventTypes":["account.created"]}"#, basic: Self.credential)
            #expect(added.status == 201)
            // Eight signups per server: within its signup limit per client.
            let signups = 16
            for index in 0..<signups {
                let server = servers[index % 2]
                let answer = try await server.send(
                    "POST", "/v1/accounts", json: #"{"userId":"u\#(index)@example.org","password":"correct horse battery","name":{"givenName":"U"}}"#)
                #expect(answer.status == 201)
            }
            #expect(try await eventually(seconds: 60) { receiver.taken.count >= 5 })
            // The one that holds the lease is killed, mid-stream.
            let listed = try await servers[0].send("GET", "/admin/api/webhooks", basic: Self.credential)
            let holder = try #require((listed.body["runner"] as? [String: Any])?["node"] as? String)
            let killed = holder == "node-a" ? 0 : 1
            servers[killed].process.signal(SIGKILL)
            servers[killed].process.waitUntilExit()
            let survivor = servers[1 - killed]
            #expect(receiver.taken.count < signups, "the kill came after every delivery: the test proves nothing")
            receiver.hold.withLock { $0 = nil }

            #expect(try await eventually(seconds: 60) { receiver.taken.count == signups })
            let taken = receiver.taken
            #expect(taken.allSatisfy { $0.type == "account.created" })
            // First arrivals in log order: the survivor went on from the checkpoint, in order.
            #expect(taken.map(\.position) == taken.map(\.position).sorted())
            // The killed server's last delivery may have reached the receiver, never its checkpoint:
            // the survivor takes the lease over (after the lease time) and delivers it again.
            let survivorNode = killed == 0 ? "node-b" : "node-a"
            var listing: [String: Any] = [:]
            #expect(
                try await eventually(seconds: 30) {
                    listing = try await survivor.send("GET", "/admin/api/webhooks", basic: Self.credential).body
                    let subscription = (listing["subscriptions"] as? [[String: Any]])?.first
                    return (listing["runner"] as? [String: Any])?["node"] as? String == survivorNode
                        && (subscription?["behind"] as? Int).map { $0 < 16 } == true && subscription?["failures"] as? Int == 0
                }, "\(listing)")
            #expect(await survivor.terminate() == 0)
        }
    }
}
