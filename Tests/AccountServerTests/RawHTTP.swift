//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/1.1 over plain sockets, from a chosen source address on the loopback network (127.0.0.0/8
/// is all loopback on Linux), so that a test can be several clients. Blocking calls, made off
/// Swift's pool.
enum RawHTTP {
    struct Answer: Sendable {
        let status: Int
        let headers: [String: String]
        let body: String
        /// Every `Set-Cookie` line (``headers`` keeps only the last of repeated headers).
        var setCookies: [String] = []

        /// The `name=value` pairs of the cookies set, for a `Cookie` header.
        var cookiePairs: [String] {
            setCookies.compactMap { $0.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } }
        }

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
        var problemType: String? { json["type"] as? String }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A connected socket from `source` to 127.0.0.1:`port`.
    static func connect(port: Int, source: String? = nil, timeoutSeconds: Int = 60) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // Bounds connect(2) too.
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(descriptor)
                throw Failure(description: "bind \(source): errno \(errno)")
            }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            close(descriptor)
            throw Failure(description: "connect: errno \(error)")
        }
        return descriptor
    }

    /// The request's bytes: `Connection: close`, JSON body if any.
    static func request(_ method: String, _ path: String, json: String? = nil, headers: [String: String] = [:]) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        if let json {
            text += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
        } else {
            text += "Content-Length: 0\r\n\r\n"
        }
        return Array(text.utf8)
    }

    static func write(_ descriptor: Int32, _ bytes: ArraySlice<UInt8>) throws {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += written
        }
    }

    /// Reads until the server closes the connection, then parses the answer.
    static func readAnswer(_ descriptor: Int32) throws -> Answer {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw Failure(description: "recv: errno \(errno) after \(data.count) bytes") }
            data += buffer[0..<count]
        }
        return try parse(data)
    }

    /// Reads the status line and headers only (for a streaming answer that does not end).
    static func readHead(_ descriptor: Int32) throws -> Answer {
        var data = [UInt8]()
        var byte: UInt8 = 0
        while !data.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(descriptor, &byte, 1, 0) == 1 else { throw Failure(description: "recv: errno \(errno) in the head") }
            data.append(byte)
        }
        return try parse(data)
    }

    static func parse(_ data: [UInt8]) throws -> Answer {
        let text = String(decoding: data, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { throw Failure(description: "no complete head in \(data.count) bytes") }
        let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        var cookies: [String] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = value
            if name == "set-cookie" { cookies.append(value) }
        }
        var body = String(text[end.upperBound...])
        if headers["transfer-encoding"] == "chunked" { body = dechunk(body) }
        return Answer(status: status, headers: headers, body: body, setCookies: cookies)
    }

    private static func dechunk(_ text: String) -> String {
        var rest = Substring(text)
        var out = ""
        while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound], radix: 16), size > 0 {
            let start = lineEnd.upperBound
            let bytes = Array(rest[start...].utf8)
            out += String(decoding: bytes.prefix(size), as: UTF8.self)
            rest = Substring(String(decoding: bytes.dropFirst(size + 2), as: UTF8.self))
        }
        return out
    }

    /// One whole exchange, off the pool.
    static func send(
        port: Int, source: String? = nil, _ method: String, _ path: String, json: String? = nil, headers: [String: String] = [:]
    ) async throws -> Answer {
        try await offThePool {
            let descriptor = try connect(port: port, source: source)
            defer { close(descriptor) }
            try write(descriptor, request(method, path, json: json, headers: headers)[...])
            return try readAnswer(descriptor)
        }
    }

    /// One whole exchange of the given request bytes, off the pool.
    static func exchange(port: Int, source: String? = nil, _ bytes: [UInt8]) async throws -> Answer {
        try await offThePool {
            let descriptor = try connect(port: port, source: source)
            defer { close(descriptor) }
            try write(descriptor, bytes[...])
            return try readAnswer(descriptor)
        }
    }

    /// Sends many requests released together: every request is written but its last byte, then
    /// all last bytes go out in one sweep, and the answers are read in order. The sockets live in a
    /// child process (Python), so that this test process keeps few descriptors: Foundation's
    /// `Process.run` crashes in a process with descriptor numbers past 1,024, and the server under
    /// test runs in this process too.
    static func together(port: Int, source: String? = nil, _ requests: [[UInt8]]) async throws -> [Answer] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("requests-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: requests.map { Data($0).base64EncodedString() }).write(to: file)
        let run = try await runProgram(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", togetherScript, String(port), source ?? "127.0.0.1", file.path],
            timeLimit: .seconds(120))
        guard let list = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String] else {
            throw Failure(description: "the sender printed \(run.output.prefix(200)) \(run.errors.prefix(400))")
        }
        return try list.map { try parse(Array(Data(base64Encoded: $0) ?? Data())) }
    }

    private static let togetherScript = """
        import base64, json, socket, sys
        port, source, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        requests = [base64.b64decode(r) for r in json.load(open(path))]
        socks = []
        for request in requests:
            s = socket.socket(); s.settimeout(60); s.bind((source, 0)); s.connect(("127.0.0.1", port))
            s.sendall(request[:-1]); socks.append(s)
        for s, request in zip(socks, requests):
            s.sendall(request[-1:])
        answers = []
        for s in socks:
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            answers.append(base64.b64encode(data).decode())
            s.close()
        print(json.dumps(answers), flush=True)
        """

    /// Opens a connection from `source`, sends `request` and reads the answer's head, off the pool:
    /// the descriptor stays open for the caller to read the rest or to close.
    static func openStream(port: Int, source: String? = nil, _ request: [UInt8]) async throws -> (descriptor: Int32, head: Answer) {
        try await offThePool {
            let descriptor = try connect(port: port, source: source)
            do {
                try write(descriptor, request[...])
                return (descriptor, try readHead(descriptor))
            } catch {
                close(descriptor)
                throw error
            }
        }
    }

    /// ``endsWithin(_:seconds:)`` off the pool.
    static func ends(_ descriptor: Int32, within seconds: Double) async throws -> Bool {
        try await offThePool { endsWithin(descriptor, seconds: seconds) }
    }

    /// Whether the server ends the stream on `descriptor` within `seconds`: whatever it sends
    /// meanwhile (heartbeats, events) is read and dropped until the end of the stream or a reset.
    static func endsWithin(_ descriptor: Int32, seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1_000))
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while ContinuousClock.now < deadline {
            let left = deadline - ContinuousClock.now
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(max(1, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000))
            guard poll(&entry, 1, milliseconds) == 1 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 { return true }
        }
        return false
    }

    /// Whether the server closes `descriptor` within `seconds` (reads EOF or a reset).
    static func closedByServer(_ descriptor: Int32, within seconds: Double) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(seconds * 1_000)) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
    }
}

/// `text` without the members that name the request (`instance` and `requestId` of a problem
/// document): two answers that must not tell their requests apart are compared this way, the
/// request's own id being random and different for each.
func withoutRequestID(_ text: String) -> String {
    text.replacing(/"instance":"urn:spezi-account-store:request:[0-9a-f]{32}",?/, with: "")
        .replacing(/"requestId":"[0-9a-f]{32}",?/, with: "")
}

extension RawHTTP.Answer {
    /// The body without the request's id (``withoutRequestID(_:)``).
    var comparableBody: String { withoutRequestID(body) }
}

extension APIResponse {
    /// The text without the request's id (``withoutRequestID(_:)``).
    var comparableText: String { withoutRequestID(text) }
}
