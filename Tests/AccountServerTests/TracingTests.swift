//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import InMemoryTracing
import Instrumentation
import Synchronization
import Testing
import Tracing

/// A tracer for the whole test process that records, in swift-distributed-tracing's in-memory
/// tracer, only the spans a test asked for: those started while ``capturing`` is set in the task,
/// and their descendants. Every other test's spans are no-ops, so nothing piles up.
final class CapturingTracer: Tracer, Sendable {
    @TaskLocal static var capturing = false
    static let shared: CapturingTracer = {
        let tracer = CapturingTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    let recorder = InMemoryTracer()

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> CapturedSpan {
        let parent = context()
        if Self.capturing || parent.inMemorySpanContext != nil {
            return CapturedSpan(
                recorder.startSpan(operationName, context: parent, ofKind: kind, at: instant(), function: function, file: fileID, line: line))
        }
        return CapturedSpan(NoOpTracer.NoOpSpan(context: parent))
    }

    func activeSpan(identifiedBy context: InstrumentationContext) -> CapturedSpan? {
        recorder.activeSpan(identifiedBy: context).map(CapturedSpan.init)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
}

/// A recorded span or a no-op one.
struct CapturedSpan: Span {
    let inner: any Span

    init(_ inner: any Span) {
        self.inner = inner
    }

    var context: InstrumentationContext { inner.context }
    var operationName: String {
        get { inner.operationName }
        nonmutating set { inner.operationName = newValue }
    }
    var attributes: SpanAttributes {
        get { inner.attributes }
        nonmutating set { inner.attributes = newValue }
    }
    var isRecording: Bool { inner.isRecording }
    func setStatus(_ status: SpanStatus) { inner.setStatus(status) }
    func addEvent(_ event: SpanEvent) { inner.addEvent(event) }
    func addLink(_ link: SpanLink) { inner.addLink(link) }
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        inner.recordError(error, attributes: attributes, at: instant())
    }
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { inner.end(at: instant()) }
}

@Suite("Traces: route, store command, append, projection")
struct TracingTests {
    @Test("a signup's trace is a tree: the route's server span, the store's commands under it, each with its append and projection wait")
    func spanTree() async throws {
        let tracer = CapturingTracer.shared
        var configuration = AccountServerConfiguration()
        configuration.tracesRequests = true
        try await ServerFixture().withServer(configuration: configuration) { api, _ in
            let traceIDs = try await CapturingTracer.$capturing.withValue(true) {
                try await withSpan("test") { span in
                    _ = try await api.signup("traced@example.org")
                    return span.context.inMemorySpanContext?.traceID
                }
            }
            let traceID = try #require(traceIDs)
            let spans = tracer.recorder.finishedSpans.filter { $0.traceID == traceID }
            func one(_ name: String) throws -> FinishedInMemorySpan {
                let found = spans.filter { $0.operationName == name }
                try #require(found.count == 1, "spans named \(name): \(spans.map(\.operationName))")
                return found[0]
            }
            let test = try one("test")
            let route = try one("/v1/accounts")
            // The signup, then the session it opens: two commands, each with its append and its wait.
            let signup = try one("account.signup")
            let session = try one("account.change")
            #expect(route.kind == .server && route.parentSpanID == test.spanID)
            #expect(signup.parentSpanID == route.spanID && session.parentSpanID == route.spanID)
            let underSignup = spans.filter { $0.parentSpanID == signup.spanID }.map(\.operationName).sorted()
            #expect(underSignup == ["log.append", "projection.wait"])
            // The session's append is under its command; its wait for the cache follows the command, under the route.
            #expect(spans.filter { $0.parentSpanID == session.spanID }.map(\.operationName) == ["log.append"])
            #expect(spans.filter { $0.operationName == "projection.wait" }.allSatisfy { [signup.spanID, route.spanID].contains($0.parentSpanID) })
            let append = try #require(spans.first { $0.operationName == "log.append" && $0.parentSpanID == signup.spanID })
            #expect(append.attributes["log.position"] != nil && append.attributes["log.events"] != nil)
            #expect(spans.count == 8)
            // Another request, not captured, leaves no span.
            let before = tracer.recorder.finishedSpans.count
            _ = try await api.signup("untraced@example.org")
            #expect(tracer.recorder.finishedSpans.count == before)
        }
    }
}
