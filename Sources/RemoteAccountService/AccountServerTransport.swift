//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

#if canImport(AsyncHTTPClient)
    import AsyncHTTPClient
    import NIOCore
    import NIOHTTP1
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request of the account API.
public struct TransportRequest: Sendable {
    /// `GET`, `POST`, `PATCH`, `DELETE`.
    public var method: String
    /// The full URL.
    public var url: URL
    /// Header fields.
    public var headers: [String: String]
    /// The body (JSON), if any.
    public var body: Data?

    /// A request.
    ///
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - url: the full URL, the server's base URL with the API path.
    ///   - headers: header fields to send.
    ///   - body: the JSON body, or nil for none.
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What came back: the status, the header fields (names in lower case) and the whole body.
public struct TransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields, names in lower case.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// A response.
    ///
    /// - Parameters:
    ///   - status: the HTTP status code.
    ///   - headers: the header fields, names in lower case.
    ///   - body: the whole body.
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How ``RemoteAccountService`` reaches the server: one request and answer, and a streamed body
/// for the event stream. AsyncHTTPClient on Linux (``HTTPClientTransport``), URLSession elsewhere.
public protocol AccountServerTransport: Sendable {
    /// Sends a request and reads the whole answer.
    ///
    /// - Parameter request: the request.
    /// - Returns: the answer, whatever its status (an error status is not thrown here).
    /// - Throws: the transport's error when no answer arrives (no connection, a timeout, a
    ///   cancellation).
    func send(_ request: TransportRequest) async throws -> TransportResponse
    /// Sends a request and yields its body as it arrives; the status comes first.
    ///
    /// - Parameter request: the request (the account's event stream).
    /// - Returns: the answer's status and its body in pieces as they arrive; the body's sequence
    ///   throws when the connection breaks, and ends when the server ends it.
    /// - Throws: the transport's error when no answer arrives.
    func stream(_ request: TransportRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>)
}

#if canImport(AsyncHTTPClient)
    /// The transport on AsyncHTTPClient (its shared client unless one is given).
    public struct HTTPClientTransport: AccountServerTransport {
        let client: HTTPClient
        /// The longest a request (not a stream) may take.
        let timeout: TimeAmount

        /// A transport on `client`.
        ///
        /// - Parameters:
        ///   - client: the AsyncHTTPClient client (its shared one by default).
        ///   - timeout: the longest a request may take; streams have no deadline.
        public init(client: HTTPClient = .shared, timeout: Duration = .seconds(30)) {
            self.client = client
            self.timeout = TimeAmount(timeout)
        }

        /// Sends a request with AsyncHTTPClient and reads the whole answer, within the timeout.
        ///
        /// - Parameter request: the request.
        /// - Returns: the answer, whatever its status.
        /// - Throws: AsyncHTTPClient's error when no answer arrives in time, or when the body is larger
        ///   than 16 MiB.
        public func send(_ request: TransportRequest) async throws -> TransportResponse {
            let response = try await client.execute(Self.request(request), timeout: timeout)
            let body = try await response.body.collect(upTo: 16 << 20)
            var headers: [String: String] = [:]
            for (name, value) in response.headers { headers[name.lowercased()] = value }
            return TransportResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
        }

        /// Sends a request with AsyncHTTPClient, without a deadline, and hands on its body as it
        /// arrives.
        ///
        /// - Parameter request: the request.
        /// - Returns: the answer's status and its body in pieces; cancelling the sequence's consumer
        ///   ends the request.
        /// - Throws: AsyncHTTPClient's error when no answer arrives.
        public func stream(_ request: TransportRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>) {
            // No deadline: the stream lasts as long as the session; the caller cancels it.
            let response = try await client.execute(Self.request(request), deadline: .distantFuture)
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            let reader = Task {
                do {
                    for try await chunk in response.body { continuation.yield(Data(chunk.readableBytesView)) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in reader.cancel() }
            return (Int(response.status.code), stream)
        }

        private static func request(_ request: TransportRequest) -> HTTPClientRequest {
            var outgoing = HTTPClientRequest(url: request.url.absoluteString)
            outgoing.method = HTTPMethod(rawValue: request.method)
            for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
            if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
            return outgoing
        }
    }
#else
    /// The transport on URLSession.
    public struct URLSessionTransport: AccountServerTransport {
        let session: URLSession

        /// A transport on `session`.
        ///
        /// - Parameter session: the URL session (the shared one by default).
        public init(session: URLSession = .shared) {
            self.session = session
        }

        /// Sends a request with URLSession and reads the whole answer.
        ///
        /// - Parameter request: the request.
        /// - Returns: the answer, whatever its status.
        /// - Throws: URLSession's error when no answer arrives.
        public func send(_ request: TransportRequest) async throws -> TransportResponse {
            let (data, response) = try await session.data(for: Self.request(request))
            let http = response as? HTTPURLResponse
            var headers: [String: String] = [:]
            for (name, value) in http?.allHeaderFields ?? [:] { headers["\(name)".lowercased()] = "\(value)" }
            return TransportResponse(status: http?.statusCode ?? 0, headers: headers, body: data)
        }

        /// Sends a request with URLSession and hands on its body line by line as it arrives.
        ///
        /// - Parameter request: the request.
        /// - Returns: the answer's status and its body, one line per piece.
        /// - Throws: URLSession's error when no answer arrives.
        public func stream(_ request: TransportRequest) async throws -> (status: Int, body: AsyncThrowingStream<Data, any Error>) {
            let (bytes, response) = try await session.bytes(for: Self.request(request))
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            let reader = Task {
                do {
                    // Byte by byte, handed on at each line end (the event stream's blank lines matter).
                    var pending = Data()
                    for try await byte in bytes {
                        pending.append(byte)
                        if byte == 0x0A {
                            continuation.yield(pending)
                            pending.removeAll(keepingCapacity: true)
                        }
                    }
                    if !pending.isEmpty { continuation.yield(pending) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in reader.cancel() }
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, stream)
        }

        private static func request(_ request: TransportRequest) -> URLRequest {
            var outgoing = URLRequest(url: request.url)
            outgoing.httpMethod = request.method
            for (name, value) in request.headers { outgoing.setValue(value, forHTTPHeaderField: name) }
            outgoing.httpBody = request.body
            return outgoing
        }
    }
#endif

/// The platform's transport.
func defaultTransport() -> any AccountServerTransport {
    #if canImport(AsyncHTTPClient)
        HTTPClientTransport()
    #else
        URLSessionTransport()
    #endif
}
