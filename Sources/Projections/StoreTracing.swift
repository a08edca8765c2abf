//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization
import Tracing

/// Whether the store opens its spans (commands, appends, projection waits) for the tracer the
/// process bootstrapped. Off by default: swift-distributed-tracing's spans cost instructions even
/// for its no-op tracer (the tracer looked up, a task-local value set and restored per span): 1.1 %
/// of an account server's instructions in an 80/20 read/write mix (callgrind, `hot-paths
/// server-mix`, 2,000 requests: 982.1 M with the spans always on, 971.1 M without them, 971.6 M
/// behind this switch; means of three runs). A program that exports traces turns them on (the
/// account server does with `tracesRequests`).
public enum StoreTracing {
    private static let enabled = Atomic<Bool>(false)

    /// Whether spans are opened; set it once, before the store is used.
    public static var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    /// Runs `body` in a span named `name` when tracing is on, else directly (with nil).
    ///
    /// - Parameters:
    ///   - name: The span's name.
    ///   - body: The work; it gets the span to add attributes to, or nil.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw (recorded on the span).
    @inlinable
    public static func withSpan<T>(_ name: String, _ body: ((any Span)?) async throws -> T) async rethrows -> T {
        guard isEnabled else { return try await body(nil) }
        return try await Tracing.withSpan(name) { span in try await body(span) }
    }

    /// A span named `name` that the caller ends, when tracing is on; else nil.
    ///
    /// - Parameter name: The span's name.
    /// - Returns: The started span, or nil.
    @inlinable
    public static func startSpan(_ name: String) -> (any Span)? {
        guard isEnabled else { return nil }
        return Tracing.startSpan(name)
    }
}
