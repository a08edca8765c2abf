//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import Testing

@Suite("The tests' throwaway PostgreSQL server")
struct TestServerTests {
    @Test("a server started while the process has a pipe open keeps no copy of it: the reader sees the end once the writer closes")
    func noInheritedDescriptors() async throws {
        // A pipe as Foundation's `Pipe` makes one for a child's output: no close-on-exec.
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let (reader, writer) = (ends[0], ends[1])
        defer { close(reader) }
        let server = try await PostgresServer.start(name: "descriptors")
        defer { server.remove() }
        close(writer)
        // With a copy of the write end in the server, this would wait the whole five seconds.
        let (ready, count) = try await offThePool { () -> (Int32, Int) in
            var poller = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 5_000)
            var byte: UInt8 = 0
            return (ready, ready == 1 ? read(reader, &byte, 1) : -1)
        }
        #expect(ready == 1, "the pipe's reader saw no end within 5 s: the server holds the write end")
        #expect(count == 0, "end of file expected, read returned \(count)")
    }
}
