//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// Runs a shell script with the built accountctl on PATH-less `$TOOL` and fast hashing.
func runScript(_ script: String, tool: Tool) async throws -> ToolRun {
    var environment = ProcessInfo.processInfo.environment
    environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] = "1"
    environment["TOOL"] = Tool.binary.path
    environment["STORE"] = tool.store.path
    let run = try await runProgram(URL(fileURLWithPath: "/bin/bash"), ["-c", script], environment: environment)
    return ToolRun(status: run.status, stdout: run.output, stderr: run.errors)
}

@Suite("accountctl from several processes at once", .serialized, .integration)
struct AccountctlMultiProcessTests {
    @Test("four shell loops sign up twelve accounts each on one store at once: all 48 acknowledged accounts read back")
    func concurrentSignups() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        let signups = try await runScript(
            """
            for w in 1 2 3 4; do
              ( for i in $(seq 1 12); do
                  echo password123 | "$TOOL" signup --store "$STORE" --user-id "w$w-$i@x.org" --password-stdin --name "Writer$w Number$i" \
                    > /dev/null || echo "signup w$w-$i failed" >&2
                done ) &
            done
            wait
            """, tool: tool)
        #expect(signups.status == 0 && signups.stderr.isEmpty, "\(signups.stderr)")
        let shows = try await runScript(
            """
            for w in 1 2 3 4; do for i in $(seq 1 12); do
              "$TOOL" show "w$w-$i@x.org" --store "$STORE" | grep -q "Writer$w" || echo "w$w-$i@x.org unreadable"
            done; done
            """, tool: tool)
        #expect(shows.stdout.isEmpty && shows.stderr.isEmpty, "\(shows.stdout) \(shows.stderr)")
        let verify = try await tool.run(["verify"])
        #expect(verify.status == 0 && verify.stdout.contains("intact"), "\(verify.stdout)")
        let history = try await tool.run(["history", "w3-7@x.org"])
        #expect(history.stdout.contains("account.created") && !history.stdout.contains("redacted"), "\(history.stdout)")
        let vault = try Data(contentsOf: tool.store.appendingPathComponent("keys/vault"))
        #expect((vault.count - 64) / 128 == 48)
    }

    @Test("six processes modify while another rebuilds the cache: every last change reads back, a taken user id is refused")
    func modifyAndRebuildAtOnce() async throws {
        let tool = try Tool()
        defer { tool.remove() }
        for index in 1...6 {
            let run = try await tool.run(
                ["signup", "--user-id", "m\(index)@x.org", "--name", "Before Change", "--password-stdin"], input: "password123\n")
            #expect(run.status == 0, "\(run.stderr)")
        }
        let busy = try await runScript(
            """
            ( for round in 1 2 3; do "$TOOL" rebuild --store "$STORE" > /dev/null 2>&1 || echo "rebuild failed" >&2; done ) &
            for i in 1 2 3 4 5 6; do
              ( for n in 1 2 3; do "$TOOL" modify "m$i@x.org" --name "Changed$n Twice" --store "$STORE" > /dev/null || echo "modify m$i failed" >&2; done ) &
            done
            ( "$TOOL" modify m1@x.org --user-id m2@x.org --store "$STORE" > /dev/null 2>&1; echo "taken=$?" ) &
            wait
            """, tool: tool)
        #expect(busy.stderr.isEmpty, "\(busy.stderr)")
        // Taking another account's user id is refused with the service's exit status.
        #expect(busy.stdout.contains("taken=4"), "\(busy.stdout)")
        for index in 1...6 {
            let show = try await tool.run(["show", "m\(index)@x.org"])
            #expect(show.stdout.contains("Changed3"), "m\(index): \(show.stdout)")
        }
        let stats = try await tool.run(["stats"])
        #expect(stats.status == 0 && !stats.stdout.contains("failed"), "\(stats.stdout)")
    }

    @Test("backup while signups run in other processes, then restore into a new folder: the copy verifies and reads")
    func backupAndRestore() async throws {
        let tool = try Tool()
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("accountctl-backup-\(UUID().uuidString)")
        let restored = try Tool()
        defer {
            tool.remove()
            restored.remove()
            try? FileManager.default.removeItem(at: backup)
        }
        #expect(
            try await tool.run(["signup", "--user-id", "first@x.org", "--name", "First One", "--password-stdin"], input: "pw-123456\n").status == 0)
        // The backup starts once two of 30 signups (each its own process) have committed, and the
        // signups go on while it copies.
        let run = try await runScript(
            """
            marks="$STORE/../signups-done-$$"
            ( for i in $(seq 1 30); do echo pw-123456 | "$TOOL" signup --store "$STORE" --user-id "b$i@x.org" --password-stdin --name "B $i" > /dev/null; echo "$i" >> "$marks"; done ) &
            while [ "$(wc -l < "$marks" 2>/dev/null || echo 0)" -lt 2 ]; do sleep 0.02; done
            "$TOOL" backup "\(backup.path)" --store "$STORE"
            echo "signups done when the backup ended: $(wc -l < "$marks")"
            wait
            rm -f "$marks"
            """, tool: tool)
        #expect(run.status == 0 && run.stdout.contains("backed up"), "\(run.stdout) \(run.stderr)")
        let restore = try await restored.run(["restore", backup.path])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(try await restored.run(["verify"]).stdout.contains("intact"))
        #expect(try await restored.run(["show", "first@x.org"]).stdout.contains("First"))
        // The copy was taken while the signups ran: it holds some of them (at least the two it
        // waited for), not all 30, and exactly a prefix of them (they ran one after another).
        var copied: [Int] = []
        for index in 1...30 where try await restored.run(["show", "b\(index)@x.org"]).status == 0 { copied.append(index) }
        #expect(copied.count >= 2 && copied.count < 30, "the backup held signups \(copied); \(run.stdout)")
        #expect(copied.isEmpty || copied == Array(1...copied.count), "\(copied)")
        #expect(try await tool.run(["show", "b30@x.org"]).status == 0, "the signups went on after the backup")
        let again = try await restored.run(["restore", backup.path])
        #expect(again.failedCleanly && again.stderr.contains("is not empty"), "\(again.stderr)")
    }
}
