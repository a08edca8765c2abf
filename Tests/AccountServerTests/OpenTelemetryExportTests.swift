//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// `accountctl serve --otel-endpoint`: with the OpenTelemetry trait (`swift test --traits
/// OpenTelemetry`), the spans reach a collector on loopback over OTLP/HTTP; without it (the default
/// build), the option is refused with how to build it.
@Suite("accountctl serve --otel-endpoint")
struct OpenTelemetryExportTests {
    #if OpenTelemetry
    @Test("a signup's spans reach an OTLP/HTTP collector on loopback as one tree: route, command, append, wait", .timeLimit(.minutes(2)))
    func exported() async throws {
        try await TestCollector.with { collector in
            let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: store) }
            let server = try ServeProcess(store: store, extra: ["--otel-endpoint", collector.url])
            try await server.start()
            let signup = try await server.send(
                "POST", "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
            #expect(signup.status == 201)
            var spans: [[String: Any]] = []
            for _ in 0..<200 {
                spans = collector.spans
                if spans.contains(where: { $0["name"] as? String == "/v1/accounts" }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let route = try #require(spans.first { $0["name"] as? String == "/v1/accounts" })
            let trace = try #require(route["traceId"] as? String)
            let inTrace = spans.filter { $0["traceId"] as? String == trace }
            let command = try #require(inTrace.first { $0["name"] as? String == "account.signup" })
            #expect(command["parentSpanId"] as? String == route["spanId"] as? String)
            let children = inTrace.filter { $0["parentSpanId"] as? String == command["spanId"] as? String }.compactMap { $0["name"] as? String }
            #expect(children.sorted() == ["log.append", "projection.wait"])
            #expect(await server.terminate() == 0)
        }
    }
    #else
    @Test("without the OpenTelemetry trait, --otel-endpoint is refused with how to build it")
    func refusedWithoutTrait() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let refused = try ServeProcess(store: store, extra: ["--otel-endpoint", "http://127.0.0.1:4318/v1/traces"])
        let process = refused.process
        try process.run()
        try await offThePool { process.waitUntilExit() }
        #expect(process.terminationStatus != 0)
        #expect(try String(contentsOf: refused.errors, encoding: .utf8).contains("swift build --traits OpenTelemetry"))
    }
    #endif
}

#if OpenTelemetry
/// An OTLP/HTTP collector on 127.0.0.1 that takes JSON trace exports (`POST /v1/traces`) and keeps their spans.
final class TestCollector: Sendable {
    let port: Int
    private let received = Mutex<[[String: Any]]>([])

    var url: String { "http://127.0.0.1:\(port)/v1/traces" }
    /// Every span received, flattened out of its resource and scope.
    var spans: [[String: Any]] {
        received.withLock { $0 }
    }

    init(port: Int) {
        self.port = port
    }

    static func with(_ body: @Sendable (TestCollector) async throws -> Void) async throws {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let holder = Mutex<TestCollector?>(nil)
        let router = Router()
        router.post("/v1/traces") { request, _ -> Response in
            let bytes = Data(try await request.body.collect(upTo: 16 << 20).readableBytesView)
            guard let collector = holder.withLock({ $0 }),
                let object = (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any]
            else { return Response(status: .badRequest) }
            var spans: [[String: Any]] = []
            for resource in object["resourceSpans"] as? [[String: Any]] ?? [] {
                for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                    spans += scope["spans"] as? [[String: Any]] ?? []
                }
            }
            collector.received.withLock { $0 += spans }
            return Response(
                status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: "{}")))
        }
        var logger = Logger(label: "test-collector")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: app)], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await group.triggerGracefulShutdown()
            throw CancellationError()
        }
        let collector = TestCollector(port: port)
        holder.withLock { $0 = collector }
        let outcome: Result<Void, any Error>
        do {
            try await body(collector)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await group.triggerGracefulShutdown()
        _ = await running.result
        try outcome.get()
    }
}
#endif
