//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

@Suite("accountctl on a shared PostgreSQL log", .integration)
struct PostgresToolTests {
    @Test("--log postgres://…: an account signed up through one node's folder shows, verifies and counts through another's")
    func twoNodes() async throws {
        let server = try await PostgresServer.start(name: "accountctl")
        defer { server.remove() }
        let first = try Tool()
        let second = try Tool()
        defer {
            first.remove()
            second.remove()
        }
        let log = ["--log", server.url(schema: "accounts")]
        let signup = try await first.run(
            ["signup", "--user-id", "grace@example.org", "--name", "Grace Hopper", "--password-stdin"] + log, input: "cobol-1959\n")
        #expect(signup.status == 0, "\(signup.stderr)")
        let show = try await second.run(["show", "grace@example.org"] + log)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("Grace"))
        let verify = try await second.run(["verify"] + log)
        #expect(verify.status == 0, "\(verify.stderr)")
        let stats = try await second.run(["stats"] + log)
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stdout.contains("postgres://postgres@127.0.0.1"), "\(stats.stdout)")
        let refused = try await first.run(["stats", "--log", "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable"])
        #expect(refused.failedCleanly, "\(refused)")
    }
}
