//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Synchronization

/// A small lock-protected box, shared by the package's targets.
///
/// The lock is a `Mutex` from Synchronization, the package's one lock. Unlike `Mutex<Value>`, the
/// box hands out copies of values that are not `Sendable` (modules, closures), which the runtime
/// stores and reads from one isolation domain at a time.
// Unchecked Sendable: every access to `value` goes through the `Mutex`.
package final class SpeziLock<Value>: @unchecked Sendable {
    private let mutex = Mutex(())
    // Only touched while `mutex` is held.
    private nonisolated(unsafe) var value: Value

    /// Creates a box holding `value`.
    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { _ in
            try body(&value)
        }
    }

    /// A copy of the current value.
    package var current: Value {
        withLock { $0 }
    }
}

/// An `Optional` seen without knowing its `Wrapped` type.
protocol OptionalValue {
    /// The type of the wrapped value.
    static var wrappedType: Any.Type { get }
    /// `nil`, typed as `Self`.
    static var nilValue: Self { get }
    /// The wrapped value, if any, as `Any`.
    var wrappedAny: Any? { get }
}

extension Optional: OptionalValue {
    static var wrappedType: Any.Type { Wrapped.self }
    static var nilValue: Self { nil }
    var wrappedAny: Any? { map { $0 as Any } }
}

/// An `Array` seen without knowing its `Element` type.
protocol ArrayValue {
    /// The type of the elements.
    static var elementType: Any.Type { get }
    /// The elements as `Any`.
    var elementsAny: [Any] { get }
}

extension Array: ArrayValue {
    static var elementType: Any.Type { Element.self }
    var elementsAny: [Any] { map { $0 as Any } }
}
