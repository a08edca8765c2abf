//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import Testing

/// `accountctl verify` is an auditor's check: it writes nothing.
@Suite("accountctl verify never writes")
struct ReadOnlyVerifyTests {
    static func digest(_ url: URL) throws -> String {
        SHA256.hash(data: try Data(contentsOf: url)).map { String(format: "%02x", $0) }.joined()
    }

    @Test("verify leaves the log's file byte for byte as it was and builds no projections; user-ids is the separate command that opens the store")
    func writesNothing() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        try await tool.signUpUsers(3)
        let projections = tool.store.appendingPathComponent("projections")
        try FileManager.default.removeItem(at: projections)
        let data = tool.store.appendingPathComponent("log/data.mdb")
        let before = try Self.digest(data)
        let verify = try await tool.run(["verify"])
        #expect(verify.status == 0 && verify.stdout.contains("intact: 3 records"), "\(verify.stdout) \(verify.stderr)")
        #expect(try Self.digest(data) == before, "verify changed the log's file")
        #expect(!FileManager.default.fileExists(atPath: projections.path), "verify built the projections")

        let userIds = try await tool.run(["user-ids"])
        #expect(userIds.status == 0 && userIds.stdout.contains("0 user-id finding(s)"), "\(userIds.stdout) \(userIds.stderr)")
    }
}
