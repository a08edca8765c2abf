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
            try await TestCollector.with { collector in try await Self.signUpAndFindTree(collector) }
        }

        /// Signs up through `accountctl serve --otel-endpoint` and checks the tree the collector got.
        static func signUpAndFindTree(_ collector: TestCollector) async throws {
            let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: store) }
            let server = try ServeProcess(store: store, extra: ["--otel-endpoint", collector.url])
            try await server.start()
            let signup = try await server.send(
                "POST", "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
            #expect(signup.status == 201)
            let spans = try await collector.waitForSpan(named: "/v1/accounts")
            let names = spans.map { $0.name }
            let route = try #require(spans.first { $0.name == "/v1/accounts" }, "\(names)")
            let inTrace = spans.filter { $0.traceID == route.traceID }
            let command = try #require(inTrace.first { $0.name == "account.signup" }, "\(names)")
            #expect(command.parentID == route.spanID)
            let children = inTrace.filter { $0.parentID == command.spanID }.map { $0.name }.sorted()
            #expect(children == ["log.append", "projection.wait"])
            #expect(await server.terminate() == 0)
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
        struct ReceivedSpan: Sendable {
            let name: String
            let traceID: String
            let spanID: String
            let parentID: String?
        }

        let port: Int
        private let received = Mutex<[ReceivedSpan]>([])

        var url: String { "http://127.0.0.1:\(port)/v1/traces" }

        /// Every span received once one named `name` came (waiting up to 20 s).
        func waitForSpan(named name: String) async throws -> [ReceivedSpan] {
            for _ in 0..<200 {
                let spans = received.withLock { $0 }
                if spans.contains(where: { $0.name == name }) { return spans }
                try await Task.sleep(for: .milliseconds(100))
            }
            return received.withLock { $0 }
        }

        init(port: Int) {
            self.port = port
        }

        static func with(_ body: @Sendable (TestCollector) async throws -> Void) async throws {
            let holder = Mutex<TestCollector?>(nil)
            let router = Router()
            router.post("/v1/traces") { request, _ -> Response in
                let bytes = Data(try await request.body.collect(upTo: 16 << 20).readableBytesView)
                guard let collector = holder.withLock({ $0 }),
                    let object = (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any]
                else { return Response(status: .badRequest) }
                var spans: [ReceivedSpan] = []
                for resource in object["resourceSpans"] as? [[String: Any]] ?? [] {
                    for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                        for span in scope["spans"] as? [[String: Any]] ?? [] {
                            spans.append(
                                ReceivedSpan(
                                    name: span["name"] as? String ?? "", traceID: span["traceId"] as? String ?? "",
                                    spanID: span["spanId"] as? String ?? "", parentID: span["parentSpanId"] as? String))
                        }
                    }
                }
                collector.received.withLock { $0 += spans }
                return Response(
                    status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: "{}")))
            }
            try await withLoopbackApplication(router, label: "test-collector") { port in
                let collector = TestCollector(port: port)
                holder.withLock { $0 = collector }
                try await body(collector)
            }
        }
    }
#endif
