//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import Testing

/// An LMDB environment holds a fixed number of tables, and every rebuild makes a new generation of
/// them. A long-lived process that follows the rebuilds of other processes opens each new
/// generation; it must let go of the ones the others deleted, or it runs out of tables.
@Suite("accountctl serve follows the rebuilds of other processes")
struct FollowingRebuildsTests {
    @Test(
        "a server left running while 20 accountctl processes rebuild the cache one after another serves every new account", .timeLimit(.minutes(10)))
    func serverFollowsRebuilds() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store)
        try await server.start()
        defer { server.process.terminate() }
        // More rounds than the environment has tables for (10 with the details cache's).
        for round in 1...20 {
            let rebuild = try await accountctl(["rebuild", "--store", store.path])
            #expect(rebuild.status == 0, "round \(round): \(rebuild.errors)")
            let signup = try await accountctl(
                ["signup", "--store", store.path, "--user-id", "r\(round)@example.org", "--name", "Round \(round)", "--password-stdin"],
                input: "correct horse battery\n")
            #expect(signup.status == 0, "round \(round): \(signup.errors)")
            // The server reads the new account through the generation the other process built.
            let login = try await server.send(
                "POST", "/v1/sessions", json: #"{"userId":"r\#(round)@example.org","password":"correct horse battery"}"#)
            let name = ((login.body["account"] as? [String: Any])?["details"] as? [String: Any])?["name"] as? [String: Any]
            #expect(login.status == 201 && name?["givenName"] as? String == "Round", "round \(round): \(login.status) \(login.body)")
            if login.status != 201 { break }
        }
        #expect(await server.terminate() == 0)
        let errors = try String(contentsOf: server.errors, encoding: .utf8)
        #expect(!errors.contains(" error "), "\(errors.suffix(4_000))")
        let stats = try await accountctl(["stats", "--store", store.path])
        #expect(stats.status == 0 && stats.output.contains("generation 21"), "\(stats.output)")
    }

    /// Runs `accountctl` with fast hashing; `input` goes to its standard input.
    private func accountctl(_ arguments: [String], input: String? = nil) async throws -> ProgramRun {
        var environment = ProcessInfo.processInfo.environment
        environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] = "1"
        // A rebuild that never returned was the bug behind this test: killed after two minutes.
        guard let input else { return try await runProgram(ServeProcess.binary, arguments, environment: environment, timeLimit: .seconds(120)) }
        return try await runProgram(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "printf '%s' \"$INPUT\" | \"$0\" \"$@\"", ServeProcess.binary.path] + arguments,
            environment: environment.merging(["INPUT": input]) { $1 }, timeLimit: .seconds(120))
    }
}
