//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import SpeziAccountStore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A Server-Sent Events client on a plain socket: it sends one GET and reads the stream line by
/// line as it arrives (blocking reads run on a thread of their own, with a 30 s timeout).
final class EventStreamClient: @unchecked Sendable {
    private let socket: Int32
    private var buffer: [UInt8] = []

    /// Connects to `127.0.0.1:port` and requests `path` with the bearer token and `Last-Event-ID`.
    /// `authorization`, when given, is sent instead of the bearer token (HTTP Basic for the admin tail).
    init(port: Int, path: String, token: String, lastEventID: UInt64?, authorization: String? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EIO) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(socket)
            throw POSIXError(.ECONNREFUSED)
        }
        var request =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: \(authorization ?? "Bearer \(token)")\r\nAccept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        guard send(socket, bytes, bytes.count, 0) == bytes.count else { throw POSIXError(.EIO) }
    }

    deinit { close(socket) }

    /// The next line (without CR LF), or nil once the server closed the connection or 30 s passed.
    func nextLine() async -> String? {
        // A line already received needs no thread (heartbeats come in bursts of lines).
        if let line = bufferedLine() { return line }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.readLine()) }
        }
    }

    private func bufferedLine() -> String? {
        guard let newline = buffer.firstIndex(of: 0x0A) else { return nil }
        var line = Array(buffer[..<newline])
        buffer.removeFirst(newline + 1)
        if line.last == 0x0D { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }

    private func readLine() -> String? {
        while true {
            if let line = bufferedLine() { return line }
            var chunk = [UInt8](repeating: 0, count: 4_096)
            let count = recv(socket, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }

    /// Reads until a line satisfies `condition`; every line read is returned (nil: the stream ended first).
    func lines(until condition: (String) -> Bool) async -> [String]? {
        var seen: [String] = []
        while let line = await nextLine() {
            seen.append(line)
            if condition(line) { return seen }
        }
        return nil
    }
}

/// The `id` and `event` pairs in the lines of an event stream, skipping chunk-size lines of the
/// chunked transfer encoding.
func events(in lines: [String]) -> [(id: UInt64, name: String)] {
    var result: [(UInt64, String)] = []
    var id: UInt64?
    for line in lines {
        if line.hasPrefix("id: ") { id = UInt64(line.dropFirst(4)) }
        if line.hasPrefix("event: "), let current = id { result.append((current, String(line.dropFirst(7)))) }
    }
    return result
}

extension ServeProcess {
    /// Signs up ada@example.org through this server: the answer's body, its session token, the
    /// account id, and the server's port (for an ``EventStreamClient``).
    func signUpAda() async throws -> (body: [String: Any], token: String, accountId: String, port: Int) {
        let signup = try await send(
            "POST", "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
        let token = try #require(signup.body["token"] as? String)
        let accountId = try #require((signup.body["account"] as? [String: Any])?["accountId"] as? String)
        let port = try #require(Int(base.split(separator: ":").last ?? ""))
        return (signup.body, token, accountId, port)
    }
}

@Suite("accountctl serve: the account's event stream (Server-Sent Events)")
struct EventStreamTests {
    @Test("changes made through another server arrive as events with log positions; the stream ends with the session; Last-Event-ID resumes")
    func eventsAcrossServers() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        // Heartbeats far more often than a server polls for another's appends (every 250 ms): a
        // heartbeat that finds the session ended before its stream read the logout must not end it.
        let first = try ServeProcess(store: store, extra: ["--heartbeat-seconds", "0.02"])
        try await first.start()
        let second = try ServeProcess(store: store, extra: ["--heartbeat-seconds", "0.02"])
        try await second.start()
        defer {
            first.process.terminate()
            second.process.terminate()
        }
        let (_, token, accountId, port) = try await first.signUpAda()

        // Positions: 1 account.created, 2 auth.session-started. Resume after 1.
        let stream = try EventStreamClient(port: port, path: "/v1/account/events", token: token, lastEventID: 1)
        let head = try #require(await stream.lines { $0 == ": \(accountId)" })
        #expect(head.first == "HTTP/1.1 200 OK")
        #expect(head.contains { $0.lowercased() == "content-type: text/event-stream" })

        // 3 account.details-modified, through the other server.
        #expect(try await second.send("PATCH", "/v1/account", token: token, json: #"{"set":{"genderIdentity":"female"}}"#).status == 200)
        let changed = try #require(await stream.lines { $0.hasPrefix("data: ") })
        #expect(events(in: changed).map(\.id) == [3])
        #expect(events(in: changed).map(\.name) == ["detailsChanged"])
        let data = try #require(changed.last?.dropFirst(6))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        #expect(((object["after"] as? [String: Any])?["genderIdentity"] as? String) == "female")
        #expect(((object["before"] as? [String: Any])?["genderIdentity"]) == nil)

        // 4 auth.session-ended, 5 auth.logged-out: the last event, then the stream ends.
        #expect(try await second.send("DELETE", "/v1/sessions/current", token: token).status == 204)
        // The response ends with the last chunk ("0"); the connection itself stays open (keep-alive).
        let rest = try #require(await stream.lines { $0 == "0" })
        #expect(events(in: rest).map(\.id) == [5])
        #expect(events(in: rest).map(\.name) == ["disassociatingAccount"])

        // A new session resumes after 3: the logout (5) and the new login (6), nothing twice.
        let login = try await first.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#)
        let again = try #require(login.body["token"] as? String)
        let resumed = try EventStreamClient(port: port, path: "/v1/account/events", token: again, lastEventID: 3)
        let replay = try #require(await resumed.lines { $0.hasPrefix("event: associatedAccount") })
        #expect(events(in: replay).map(\.id) == [5, 6])
        #expect(events(in: replay).map(\.name) == ["disassociatingAccount", "associatedAccount"])

        // A Last-Event-ID past the log's head starts at the head: the next change arrives.
        let ahead = try EventStreamClient(port: port, path: "/v1/account/events", token: again, lastEventID: 1_000_000)
        #expect(await ahead.lines { $0 == ": \(accountId)" } != nil)
        #expect(try await second.send("PATCH", "/v1/account", token: again, json: #"{"set":{"genderIdentity":"male"}}"#).status == 200)
        let opened = ContinuousClock.now
        let next = try #require(await ahead.lines { $0.hasPrefix("data: ") || ContinuousClock.now - opened > .seconds(20) })
        #expect(events(in: next).map(\.name) == ["detailsChanged"])
        #expect(events(in: next).allSatisfy { $0.id > 6 && $0.id < 1_000_000 })

        let unauthorized = try EventStreamClient(port: port, path: "/v1/account/events", token: "nope", lastEventID: nil)
        #expect(await unauthorized.nextLine() == "HTTP/1.1 401 Unauthorized")

        // SIGTERM with a stream open: the stream ends and the server exits cleanly.
        let fromHead = try EventStreamClient(port: port, path: "/v1/account/events", token: again, lastEventID: nil)
        #expect(await fromHead.lines { $0 == ": \(accountId)" } != nil)
        #expect(await first.terminate() == 0)
        #expect(await fromHead.lines { $0 == "0" } != nil)
    }

    @Test("a session dropped by a later session start stamped by a clock ahead of this server's ends its stream once the stream read that record")
    func prunedSessionEndsTheStream() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store, extra: ["--session-seconds", "3600", "--heartbeat-seconds", "0.05"])
        try await server.start()
        defer { server.process.terminate() }
        let (_, token, accountId, port) = try await server.signUpAda()
        let stream = try EventStreamClient(port: port, path: "/v1/account/events", token: token, lastEventID: nil)
        #expect(await stream.lines { $0 == ": \(accountId)" }?.first == "HTTP/1.1 200 OK")

        // Another process, its clock past the session's expiry, starts a session: the start drops
        // the first session as expired, and no record ends it. By this server's clock the session
        // has an hour left.
        let ahead = Date().addingTimeInterval(3_700)
        let start = AccountEvent.sessionStarted(
            sessionHash: String(repeating: "0", count: 64), expiresAtMicros: Int64(ahead.timeIntervalSince1970 * 1_000_000) + 3_600_000_000)
        let log = try EventLog(path: store.appendingPathComponent("log").path)
        let proposed = ProposedEvent(type: start.typeName, schemaVersion: start.schemaVersion, payload: Data(start.encodedPayload()))
        _ = try await log.appendImported([(proposed, ahead)], to: accountId, expectedVersion: .any, claims: [], releases: [])
        await log.close()
        #expect(try await server.send("GET", "/v1/account", token: token).status == 401)

        // The stream ends once it has read that record (before: only at the expiry, an hour on).
        let deadline = ContinuousClock.now + .seconds(30)
        let rest = try #require(await stream.lines { $0 == "0" || ContinuousClock.now > deadline })
        #expect(rest.last == "0", "the stream did not end within 30 s")
    }

    @Test("an expired session ends its stream at a heartbeat, with no record in the log to say so")
    func expiryEndsTheStream() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let server = try ServeProcess(store: store, extra: ["--session-seconds", "4", "--heartbeat-seconds", "0.2"])
        try await server.start()
        defer { server.process.terminate() }
        var (session, _, _, port) = try await server.signUpAda()
        // A machine slow enough to let the session expire before the stream opens: a new login.
        var stream: EventStreamClient
        var attempts = 0
        repeat {
            attempts += 1
            let token = try #require(session["token"] as? String)
            stream = try EventStreamClient(port: port, path: "/v1/account/events", token: token, lastEventID: nil)
            if await stream.nextLine() == "HTTP/1.1 200 OK" { break }
            session = try await server.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"correct horse battery"}"#).body
        } while attempts < 5
        let token = try #require(session["token"] as? String)
        let expiry = try #require((session["expiresAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
        // Heartbeats until the session is over, then the last chunk; a stream still open 40 s
        // after the expiry has missed it.
        let lines = try #require(await stream.lines { $0 == "0" || Date() > expiry.addingTimeInterval(40) })
        #expect(lines.last == "0")
        #expect(Date() >= expiry)
        #expect(events(in: lines).isEmpty)
        #expect(try await server.send("GET", "/v1/account", token: token).status == 401)
    }
}
