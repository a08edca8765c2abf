//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

// The subject of the child guardian's test: starts children (and, with `--postgres`, a
// throwaway PostgreSQL cluster), registers a clean-up that touches a file, prints what it
// started, and waits to be killed. The test kills it with SIGKILL and checks that nothing it
// started outlives it.

import Foundation
import PostgresTestServer
import TestProcesses

/// One line on standard output, unbuffered (the test reads the file while this runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments.dropFirst()
guard let marker = arguments.first else {
    FileHandle.standardError.write(Data("usage: child-guardian-check MARKER-FILE [--postgres]\n".utf8))
    exit(2)
}
var children: [ChildProcess] = []
for _ in 0..<3 {
    let child = ChildProcess()
    child.executableURL = URL(fileURLWithPath: "/bin/sleep")
    child.arguments = ["300"]
    try child.run()
    children.append(child)
    say("child \(child.processIdentifier)")
}
// A child that starts a grandchild in its group.
let shell = ChildProcess()
shell.executableURL = URL(fileURLWithPath: "/bin/sh")
shell.arguments = ["-c", "sleep 300 & echo grandchild $!; wait"]
let pipe = Pipe()
shell.standardOutput = pipe
try shell.run()
say("child \(shell.processIdentifier)")
if let line = String(data: pipe.fileHandleForReading.availableData, encoding: .utf8) { say(line.trimmingCharacters(in: .whitespacesAndNewlines)) }
try ChildGuardian.shared.get().register(cleanup: "touch \(ChildGuardian.quoted(marker))", id: "marker")
if arguments.contains("--postgres") {
    let server = try await PostgresServer.start(name: "guardian")
    say("postgres \(server.directory.path)")
    // The postmaster's pid, read now: once this process is killed, the guardian may delete the
    // folder (and the pid file in it) before the test could read it.
    let pidFile = server.directory.appendingPathComponent("data/postmaster.pid").path
    if let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8))?.split(separator: "\n").first {
        say("postmaster \(pid)")
    }
}
say("ready")
while true { sleep(60) }
