//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Receives every value other modules offer with ``Provide`` under the type `Value`.
///
/// ```swift
/// final class Collecting: Module {
///     @Collect var numbers: [Int]
///
///     func configure() {
///         // numbers holds every provided Int, dependencies' values first
///     }
/// }
/// ```
///
/// The values are available from ``Module/configure()`` on. They follow the loaded modules: a
/// module loaded later with ``SpeziRuntime/loadModule(_:ownership:)`` adds its values, and an
/// unloaded one takes its values away.
@propertyWrapper
public struct Collect<Value> {
    let storage = CollectStorage(elementType: ObjectIdentifier(Value.self))

    /// Declares a collection of the values offered as `Value`.
    public init() {}

    /// The collected values, in the order the offering modules were configured.
    public var wrappedValue: [Value] {
        guard let values = storage.values.current else {
            preconditionFailure("@Collect [\(Value.self)] was read before the Spezi runtime injected it; read it in configure() or later")
        }
        return values.compactMap { $0 as? Value }
    }
}

/// The shared storage behind a Collect; the runtime fills it before configure() and after every
/// load and unload.
// Unchecked Sendable: its values are held in a `SpeziLock`, written by the runtime between loads.
final class CollectStorage: @unchecked Sendable {
    let elementType: ObjectIdentifier
    let values = SpeziLock<[Any]?>(nil)

    init(elementType: ObjectIdentifier) {
        self.elementType = elementType
    }
}

protocol CollectDeclaration {
    var collectStorage: CollectStorage { get }
}

extension Collect: CollectDeclaration {
    var collectStorage: CollectStorage { storage }
}
