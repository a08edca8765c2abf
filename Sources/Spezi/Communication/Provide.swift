//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Offers a value to other modules, which receive it with ``Collect``; no dependency between the
/// two modules is needed.
///
/// ```swift
/// final class Offering: Module {
///     @Provide var favoriteNumber: Int = 42
///     @Provide var maybe: Int?          // nothing is offered while it is nil
///     @Provide var several: [Int] = []  // each element is offered on its own
///
///     init() {
///         several = [1, 2, 3]
///     }
/// }
/// ```
///
/// The runtime reads every provided value of the modules it loads before it configures any of
/// them, so a `@Collect` sees the values of the whole batch, in configuration order (dependencies
/// first), and of every module loaded earlier. Set the value in `init`: later changes are not
/// seen by collectors. The value is matched by its declared type (`Value`, the wrapped type of an
/// optional, or the element type of an array), not by the type of the instance.
@propertyWrapper
public struct Provide<Value> {
    let storage: ProvideStorage<Value>

    /// Offers `wrappedValue`.
    ///
    /// - Parameter wrappedValue: the initial value (usually given at the declaration).
    public init(wrappedValue: Value) {
        self.storage = ProvideStorage(wrappedValue)
    }

    /// The offered value.
    public var wrappedValue: Value {
        get { storage.value.current }
        nonmutating set { storage.value.withLock { $0 = newValue } }
    }
}

/// The values one `@Provide` offers, without their static type.
protocol ProvidedValues: AnyObject {
    /// The type collectors match on.
    var elementType: ObjectIdentifier { get }
    /// The values offered now (none for a nil optional, each element of an array).
    func elements() -> [Any]
}

/// The shared storage behind a Provide.
// Unchecked Sendable: its value is held in a `SpeziLock`.
final class ProvideStorage<Value>: ProvidedValues, @unchecked Sendable {
    let value: SpeziLock<Value>
    let elementType: ObjectIdentifier

    init(_ value: Value) {
        self.value = SpeziLock(value)
        if let optional = Value.self as? any OptionalValue.Type {
            self.elementType = ObjectIdentifier(optional.wrappedType)
        } else if let array = Value.self as? any ArrayValue.Type {
            self.elementType = ObjectIdentifier(array.elementType)
        } else {
            self.elementType = ObjectIdentifier(Value.self)
        }
    }

    func elements() -> [Any] {
        let current = value.current
        if let optional = current as? any OptionalValue {
            return optional.wrappedAny.map { [$0] } ?? []
        }
        if let array = current as? any ArrayValue {
            return array.elementsAny
        }
        return [current]
    }
}

protocol ProvideDeclaration {
    var provided: any ProvidedValues { get }
}

extension Provide: ProvideDeclaration {
    var provided: any ProvidedValues { storage }
}
