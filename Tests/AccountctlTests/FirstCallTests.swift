//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Testing

/// A store whose projections were never built (a copied log, a deleted `projections/` folder)
/// answers `show` and `stats` on the first call.
@Suite("accountctl on a store without projections")
struct FirstCallTests {
    @Test("show and stats answer on the first call after projections/ was deleted")
    func firstCall() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        try await tool.signUpUsers(3)
        for command in [["show", "u2@x.org"], ["stats"]] {
            try FileManager.default.removeItem(at: tool.store.appendingPathComponent("projections"))
            let run = try await tool.run(command)
            #expect(run.status == 0, "\(command): \(run.stderr)")
            if command[0] == "show" { #expect(run.stdout.contains(#"{"familyName":"2","givenName":"User"}"#), "\(run.stdout)") }
            if command[0] == "stats" { #expect(run.stdout.contains("accounts:       3"), "\(run.stdout)") }
        }
    }
}

extension Tool {
    /// Signs up `u1@x.org` … `u<count>@x.org` (names "User 1" …), each expected to succeed.
    func signUpUsers(_ count: Int) async throws {
        for index in 1...count {
            let signup = try await run(
                ["signup", "--user-id", "u\(index)@x.org", "--name", "User \(index)", "--password-stdin"], input: "pw-123456\n")
            #expect(signup.status == 0, "\(signup.stderr)")
        }
    }
}
