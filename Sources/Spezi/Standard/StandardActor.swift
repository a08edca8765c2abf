//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Gives a module access to the configuration's Standard, typed as a constraint protocol.
///
/// ```swift
/// final class ExampleModule: Module {
///     @StandardActor var standard: any ExampleConstraint
/// }
/// ```
/// Loading fails with SpeziError/standardConstraintNotSatisfied(module:constraint:standard:) when the
/// standard does not conform. Declared as an optional (`(any ExampleConstraint)?`), the property is
/// `nil` when the standard does not conform, and loading goes on. `any Standard` accepts every
/// standard. The value is available from Module/configure() on.
@propertyWrapper
public struct StandardActor<Value> {
    let box: StandardBox

    /// Declares access to the standard as `Value` (usually `any SomeConstraint`, or an optional of it).
    public init() {
        if let optional = Value.self as? any OptionalValue.Type {
            self.box = StandardBox(constraintName: String(describing: optional.wrappedType)) { _ in true }
        } else {
            self.box = StandardBox(constraintName: String(describing: Value.self)) { standard in
                standard is Value
            }
        }
    }

    /// The injected standard.
    public var wrappedValue: Value {
        guard let standard = box.standard.current else {
            preconditionFailure("@StandardActor \(Value.self) was read before the Spezi runtime injected the standard")
        }
        if let value = standard as? Value {
            return value
        }
        if let optional = Value.self as? any OptionalValue.Type, let none = optional.nilValue as? Value {
            return none
        }
        preconditionFailure("The standard \(type(of: standard)) does not conform to \(Value.self)")
    }
}

extension StandardActor where Value == any Standard {
    /// Declares access to the standard as `any Standard` (`@StandardActor var standard`, no type).
    public init() {
        self.box = StandardBox(constraintName: "any Standard") { _ in true }
    }
}

/// Upstream's name of the type behind `@StandardActor`.
public typealias _StandardPropertyWrapper<Value> = StandardActor<Value>  // swiftlint:disable:this type_name

/// The shared storage of a StandardActor; filled once by the runtime.
// Unchecked Sendable: the standard is held in a `SpeziLock`; the rest is immutable.
final class StandardBox: @unchecked Sendable {
    let constraintName: String
    let accepts: (any Standard) -> Bool
    let standard = SpeziLock<(any Standard)?>(nil)

    init(constraintName: String, accepts: @escaping (any Standard) -> Bool) {
        self.constraintName = constraintName
        self.accepts = accepts
    }
}

protocol StandardDeclaration {
    var standardBox: StandardBox { get }
}

extension StandardActor: StandardDeclaration {
    var standardBox: StandardBox { box }
}
