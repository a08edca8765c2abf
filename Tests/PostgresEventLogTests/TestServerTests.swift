//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

@Suite("The tests' throwaway PostgreSQL server", .integration)
struct TestServerTests {
    @Test("a server started while the process has a pipe open keeps no copy of it: no process of the server holds either end")
    func noInheritedDescriptors() async throws {
        // A pipe as Foundation's `Pipe` makes one for a child's output: no close-on-exec.
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let (reader, writer) = (ends[0], ends[1])
        defer {
            close(reader)
            close(writer)
        }
        var status = stat()
        try #require(fstat(writer, &status) == 0)
        let pipeName = "pipe:[\(status.st_ino)]"
        let server = try await PostgresServer.start(name: "descriptors")
        defer { server.remove() }
        // The server's processes, looked at directly: a child another test starts meanwhile may
        // inherit the pipe (Foundation's `Process` closes only the descriptors open when it lists
        // them), so whether the reader sees the end says nothing about the server.
        let processes = try server.processes()
        #expect(processes.count >= 2, "the postmaster and at least one of its background processes: \(processes)")
        var looked = 0
        for process in processes {
            let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process)/fd")
            #expect(!descriptors.isEmpty)
            for descriptor in descriptors {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process)/fd/\(descriptor)") else { continue }
                looked += 1
                #expect(target != pipeName, "process \(process) of the server holds the test's pipe as descriptor \(descriptor)")
            }
        }
        // Each has at least its three standard descriptors.
        #expect(looked >= 3 * processes.count)
    }
}

extension PostgresServer {
    /// The postmaster (first line of `postmaster.pid`) and its children.
    func processes() throws -> [pid_t] {
        let pidFile = try String(contentsOf: directory.appendingPathComponent("data/postmaster.pid"), encoding: .utf8)
        let postmaster = try #require(pid_t(pidFile.split(separator: "\n").first ?? ""))
        var pids = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8) else { continue }
            // pid (comm) state ppid …: the command may hold spaces and parentheses, so read after the last ')'.
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { pids.append(pid) }
        }
        return pids
    }
}
