//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Declares that a module needs another module.
///
/// - `@Dependency(Account.self) var account`: required; boot fails with
///   SpeziError/missingDependency(module:dependency:) unless the module is configured or is
///   DefaultInitializable (then it is created on demand).
/// - `@Dependency(Account.self) var account: Account?`: optional; `nil` when nobody configured it.
/// - `@Dependency var modules: [any Module]` initialised with instances: modules this module brings
///   along; they are registered and configured before it.
///
/// Dependencies are configured before the modules that depend on them.
@propertyWrapper
public struct Dependency<Value> {
    let box: DependencyBox
    /// The value of an optional dependency that is not configured (`.some(nil)`); `nil` otherwise.
    private let absent: Value?

    init(box: DependencyBox, absent: Value? = nil) {
        self.box = box
        self.absent = absent
    }

    /// The injected module(s).
    public var wrappedValue: Value {
        let modules = box.resolved.current
        if box.kind == .collection, let modules = modules as? Value {
            return modules
        }
        if let first = modules.first, let value = first as? Value {
            return value
        }
        if let absent, box.isInjected.current {
            return absent
        }
        preconditionFailure("@Dependency(\(box.typeName)) was read before the Spezi runtime injected it")
    }
}

extension Dependency where Value: Module {
    /// A required dependency on a module of type `Value`.
    public init(_ type: Value.Type) {
        self.init(box: DependencyBox(kind: .required, type: Value.self))
    }

    /// A required dependency with a fallback instance, used when the configuration has none of this type.
    public init(wrappedValue: Value) {
        self.init(box: DependencyBox(kind: .required, type: Value.self, fallback: wrappedValue))
    }
}

extension Dependency {
    /// An optional dependency on a module of type `M`: `nil` when it is not configured.
    public init<M: Module>(_ type: M.Type) where Value == M? {
        self.init(box: DependencyBox(kind: .optional, type: M.self), absent: .some(nil))
    }
}

extension Dependency where Value == [any Module] {
    /// A collection of module instances this module brings along (registered and configured first).
    public init(wrappedValue: [any Module]) {
        self.init(box: DependencyBox(instances: wrappedValue))
    }

    /// A collection of module instances, written with the ``ModuleBuilder``.
    public init(@ModuleBuilder _ modules: () -> ModuleCollection) {
        self.init(wrappedValue: modules().modules)
    }
}

protocol DependencyDeclaration {
    var dependencyBox: DependencyBox { get }
}

extension Dependency: DependencyDeclaration {
    var dependencyBox: DependencyBox { box }
}
