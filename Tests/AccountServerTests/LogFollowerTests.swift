//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import TestSupport
import TestTiers
import Testing

/// A back-end in another language follows the log over HTTP with a checkpoint of its own: a
/// Python follower (standard library only) reads `GET /admin/api/log/records` page by page.
@Suite("a follower in Python reads the log over HTTP and resumes from its checkpoint", .integration, .timeLimit(.minutes(3)))
struct LogFollowerTests {
    static let password = "a long admin password"

    /// Reads every page after the checkpoint in `state` (a file; 0 when missing), prints one line
    /// a record (`position type stream id`), and saves the checkpoint after each page.
    static let follower = """
        import base64, json, os, sys, urllib.request
        port, state, password = sys.argv[1], sys.argv[2], sys.argv[3]
        after = int(open(state).read()) if os.path.exists(state) else 0
        auth = "Basic " + base64.b64encode(("grace:" + password).encode()).decode()
        while True:
            url = f"http://127.0.0.1:{port}/admin/api/log/records?after={after}&limit=3"
            page = json.load(urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": auth}), timeout=30))
            for record in page["records"]:
                print(record["position"], record["type"], record["stream"], record["id"])
            if not page["records"]:
                break
            after = page["next"]
            open(state, "w").write(str(after))
        """

    static func follow(port: Int, state: URL) async throws -> [(position: UInt64, type: String, id: String)] {
        let run = try await runProgram(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", follower, String(port), state.path, password], timeLimit: .seconds(60))
        try #require(run.status == 0, "the follower failed: \(run.errors)")
        return run.output.split(separator: "\n").map { line in
            let parts = line.split(separator: " ").map(String.init)
            return (UInt64(parts[0]) ?? 0, parts[1], parts[3])
        }
    }

    @Test("from position 0, then from the checkpoint: every record once, in order, none twice")
    func followAndResume() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("follower-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            for index in 0..<4 { _ = try await server.signup("first\(index)@example.org") }
            let firstHead = try await server.store.log.lastPosition()
            let first = try await Self.follow(port: server.port, state: state)
            #expect(first.map(\.position) == Array(1...firstHead))
            #expect(first.contains { $0.type == "account.created" })
            #expect(try String(contentsOf: state, encoding: .utf8) == String(firstHead))

            for index in 0..<3 { _ = try await server.signup("second\(index)@example.org") }
            let secondHead = try await server.store.log.lastPosition()
            let second = try await Self.follow(port: server.port, state: state)
            // Only what came after the checkpoint, each record once, in order.
            #expect(second.map(\.position) == Array((firstHead + 1)...secondHead))
            #expect(Set((first + second).map(\.id)).count == first.count + second.count)
            // Caught up: a third run reads nothing.
            #expect(try await Self.follow(port: server.port, state: state).isEmpty)
        }
    }

    @Test("the pages need the admin's credential and refuse a malformed position or limit")
    func refusals() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        try await LiveServer.with(configuration: configuration, realHashing: false) { server in
            #expect(try await RawHTTP.send(port: server.port, "GET", "/admin/api/log/records").status == 401)
            let basic = ["Authorization": "Basic \(Data("grace:\(Self.password)".utf8).base64EncodedString())"]
            for query in ["after=-1", "after=x", "limit=0", "limit=1001"] {
                let answer = try await RawHTTP.send(port: server.port, "GET", "/admin/api/log/records?\(query)", headers: basic)
                #expect(answer.status == 400, "\(query): \(answer.body)")
            }
            let empty = try await RawHTTP.send(port: server.port, "GET", "/admin/api/log/records?after=999999", headers: basic)
            #expect(empty.status == 200 && (empty.json["records"] as? [Any])?.isEmpty == true, "\(empty.body)")
        }
    }
}
