//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// Real I/O faults in the key vault (`keys/vault`), injected by the fault shim into an
/// `accountctl` process: the command fails with a clear error, the log holds nothing of it, and
/// the store works again once the fault is gone.
@Suite("I/O faults in the key vault", .serialized, .timeLimit(.minutes(3)), .integration)
struct VaultFaultTests {
    @Test(
        "a signup whose new key cannot be flushed (EIO) or written (ENOSPC) fails cleanly; the log holds nothing of it; the next signup works",
        arguments: ["fdatasync:EIO:1:1", "pwrite:ENOSPC:1:1"])
    func failedKeyWrite(spec: String) async throws {
        let tool = try Tool()
        defer { tool.remove() }
        let first = try await tool.run(["signup", "--user-id", "first@x.org", "--name", "First One", "--password-stdin"], input: "pw-123456\n")
        #expect(first.status == 0, "\(first.stderr)")
        let before = try await tool.run(["stats"])

        // The signup's new key is the vault's first write in this process: it fails.
        let environment = try FaultShim.environment(["IOFAULT_FILES": "vault", "IOFAULT_FAIL": spec])
        let faulted = try await tool.run(
            ["signup", "--user-id", "second@x.org", "--name", "Second One", "--password-stdin"], input: "pw-123456\n", environment: environment)
        #expect(faulted.stderr.contains("iofault: "), "the fault reached the vault: \(faulted.stderr)")
        // The tool's own output, without the shim's notes: one clear line, no crash.
        let own = ToolRun(
            status: faulted.status, stdout: faulted.stdout,
            stderr: faulted.stderr.split(separator: "\n").filter { !$0.hasPrefix("iofault: ") }.joined(separator: "\n"))
        #expect(own.failedCleanly, "\(faulted)")
        let expected = spec.contains("ENOSPC") ? "No space left on device" : "Input/output error"
        #expect(own.stderr.contains("key vault") && own.stderr.contains(expected), "\(faulted.stderr)")

        // Nothing of it in the log; the store verifies; the first account reads.
        #expect(try await tool.run(["show", "second@x.org"]).status != 0)
        #expect(try await tool.run(["stats"]).stdout == before.stdout)
        #expect(try await tool.run(["verify"]).stdout.contains("intact"))
        #expect(try await tool.run(["show", "first@x.org"]).stdout.contains("First"))

        // Without the fault, the same signup works and reads back.
        let again = try await tool.run(["signup", "--user-id", "second@x.org", "--name", "Second One", "--password-stdin"], input: "pw-123456\n")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await tool.run(["show", "second@x.org"]).stdout.contains("Second"))
        #expect(try await tool.run(["verify"]).stdout.contains("intact"))
    }
}
