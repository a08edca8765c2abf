//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import SpeziAccountStore
import TestSupport
import TestTiers
import Testing

/// A node whose details cache cannot advance: another process holds the projections' LMDB write
/// lock (Python's lmdb package, as an operator's tool would). Writes still commit to the log.
@Suite("a node whose projection is stalled", .timeLimit(.minutes(3)), .integration)
struct StalledProjectionTests {
    @Test("a committed write is answered 202 with its position, never 5xx; readiness says why; all is there once it advances")
    func stalledProjection() async throws {
        var configuration = AccountServerConfiguration()
        configuration.stallThreshold = .milliseconds(500)
        try await LiveServer.with(configuration: configuration, realHashing: false, tweaks: StoreTweaks(readYourWritesTimeout: .seconds(1))) {
            server in
            #expect(try await RawHTTP.send(port: server.port, "GET", "/health/ready").status == 200)
            // The write lock, held by another process until its standard input closes.
            let holder = ChildProcess()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            holder.arguments = [
                "python3", "-c",
                "import lmdb, sys; env = lmdb.open(sys.argv[1], max_dbs=256); txn = env.begin(write=True); print('held', flush=True); sys.stdin.read()",
                server.store.directory + "/projections"
            ]
            let input = Pipe()
            let output = Pipe()
            holder.standardInput = input
            holder.standardOutput = output
            try holder.run()
            defer {
                try? input.fileHandleForWriting.close()
                holder.waitUntilExit()
            }
            let line = try await offThePool { String(decoding: output.fileHandleForReading.availableData, as: UTF8.self) }
            try #require(line.contains("held"), "the lock holder said \(line)")

            let signup = try await RawHTTP.send(
                port: server.port, "POST", "/v1/accounts",
                json: #"{"userId":"late@example.org","password":"correct horse battery","name":{"givenName":"L"}}"#)
            #expect(signup.status == 202)
            #expect(signup.json["status"] as? String == "accepted")
            let position = try #require(signup.json["position"] as? Int)
            let receipt = try #require(signup.json["receipt"] as? String)
            let location = "/v1/positions/\(position)?receipt=\(receipt)"
            #expect(signup.headers["location"] == location)
            // Without the receipt (or a session), a stranger learns nothing of the log's length.
            #expect(try await RawHTTP.send(port: server.port, "GET", "/v1/positions/\(position)").status == 401)
            // Committed: in the log, whatever the cache says.
            #expect(try await server.store.accounts.accountId(forUserId: "late@example.org") != nil)
            #expect(try await RawHTTP.send(port: server.port, "GET", location).status == 202)
            // A retry of the signup is told the user id is taken (it was done).
            let retry = try await RawHTTP.send(
                port: server.port, "POST", "/v1/accounts",
                json: #"{"userId":"late@example.org","password":"correct horse battery","name":{"givenName":"L"}}"#)
            #expect(retry.status == 409)

            try await Task.sleep(for: .seconds(1))
            let ready = try await RawHTTP.send(port: server.port, "GET", "/health/ready")
            #expect(ready.status == 503)
            let reasons = ready.json["reasons"] as? [String] ?? []
            #expect(reasons.contains { $0.contains("account-details") && $0.contains("has not advanced") }, "\(reasons)")

            try input.fileHandleForWriting.close()
            let deadline = ContinuousClock.now + .seconds(30)
            var applied = 0
            while ContinuousClock.now < deadline {
                applied = try await RawHTTP.send(port: server.port, "GET", location).status
                if applied == 200 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(applied == 200)
            #expect(try await RawHTTP.send(port: server.port, "GET", "/health/ready").status == 200)
            // Signed in (201), or, on a loaded machine whose cache lags past the short wait this
            // test sets, committed and accepted (202): never refused.
            let login = try await server.login("late@example.org", "correct horse battery").status
            #expect(login == 201 || login == 202)
        }
    }

    @Test("RemoteAccountService: a signup answered 202 accepted waits for the node, then signs in; nothing is signed up twice")
    func remoteServiceWaits() async throws {
        try await LiveServer.with(realHashing: false, tweaks: StoreTweaks(readYourWritesTimeout: .milliseconds(500))) { server in
            let holder = try await offThePool { try LockHolder(projections: server.store.directory + "/projections") }
            let harness = try await RemoteHarness(server: "http://127.0.0.1:\(server.port)")
            // The lock goes after 3 s: the signup's answer (202 after 0.5 s) came while it was held.
            let release = Task {
                try await Task.sleep(for: .seconds(3))
                try await offThePool { holder.release() }
            }
            try await harness.service.signup(ada("remote-late@example.org"))
            try await release.value
            let details = try #require(harness.account.details)
            #expect(details.userId == "remote-late@example.org")
            #expect(holder.released)
            // One account, one signup.
            let accountId = try #require(try await server.store.accounts.accountId(forUserId: "remote-late@example.org"))
            #expect(details.accountId == accountId)
            #expect(try await server.store.log.readStream(accountId, from: 1, limit: 100).filter { $0.type == "account.created" }.count == 1)
            await harness.runtime.shutdown()
        }
    }
}

/// Another process (Python's lmdb) holding the projections' LMDB write lock until released.
final class LockHolder: @unchecked Sendable {
    private let process = ChildProcess()
    private let input = Pipe()
    private(set) var released = false

    init(projections: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import lmdb, sys; env = lmdb.open(sys.argv[1], max_dbs=256); txn = env.begin(write=True); print('held', flush=True); sys.stdin.read()",
            projections
        ]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard line.contains("held") else { throw CancellationError() }
    }

    func release() {
        guard !released else { return }
        released = true
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    deinit {
        release()
    }
}
