//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Declares that a module needs another module.
///
/// - `@Dependency(Account.self) var account`: required; loading fails with
///   SpeziError/missingDependency(module:dependency:) unless a module of exactly this type is
///   loaded, another module declares a default instance of it, or it is DefaultInitializable
///   (then it is created on demand).
/// - `@Dependency var storage = Storage()`: required, with a default instance used when no module
///   of the type is loaded (several defaults of one type share the first).
/// - `@Dependency(Account.self) var account: Account?`: optional; `nil` when none is loaded. It
///   follows modules loaded and unloaded later. `Dependency(wrappedValue:)` gives it a default.
/// - `_module = Dependency(load: Module())`: always loads that instance and uses it.
/// - `@Dependency var modules: [any Module]` with a ``DependencyBuilder`` or a
///   ``DependencyCollection``: modules this module brings along, all of them loaded.
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

    /// An empty collection: what `@Dependency var modules: [any Module]` holds when an initializer
    /// of the module leaves it unset. (Declared here, not in an extension, for Swift to use it so.)
    public init() where Value == [any Module] {
        self.init(box: DependencyBox(instances: []))
    }

    /// The injected module(s).
    public var wrappedValue: Value {
        let modules = box.modules
        if box.kind == .collection, let modules = modules as? Value {
            return modules
        }
        if let first = modules.first, let value = first as? Value {
            return value
        }
        if let absent, box.isInjected {
            return absent
        }
        preconditionFailure("@Dependency(\(box.typeName)) was read before the Spezi runtime injected it")
    }
}

extension Dependency where Value: Module {
    /// A required dependency on a module of type `Value`.
    ///
    /// - Parameter type: the module type.
    public init(_ type: Value.Type) {
        self.init(box: DependencyBox(kind: .required, type: Value.self))
    }

    /// A required dependency with a default instance, created and loaded only when no module of
    /// the type is loaded.
    ///
    /// - Parameters:
    ///   - wrappedValue: the default instance.
    ///   - type: the module type (inferred).
    public init(wrappedValue: @escaping @autoclosure () -> Value, _ type: Value.Type = Value.self) {
        self.init(box: DependencyBox(kind: .required, type: Value.self, default: wrappedValue))
    }

    /// A dependency on this very instance: it is always loaded (even when another module of its
    /// type is) and it is what the property returns.
    ///
    /// - Parameters:
    ///   - dependency: the instance to load.
    ///   - type: the module type (inferred).
    public init(load dependency: Value, _ type: Value.Type = Value.self) {
        self.init(box: DependencyBox(load: dependency))
    }
}

extension Dependency {
    /// An optional dependency on a module of type `M`: `nil` when none is loaded.
    ///
    /// - Parameter type: the module type.
    public init<M: Module>(_ type: M.Type) where Value == M? {
        self.init(box: DependencyBox(kind: .optional, type: M.self), absent: .some(nil))
    }

    /// An optional dependency with a default instance, loaded when no module of the type is.
    ///
    /// - Parameters:
    ///   - wrappedValue: the default instance.
    ///   - type: the module type (inferred).
    public init<M: Module>(wrappedValue: @escaping @autoclosure () -> M, _ type: M.Type = M.self) where Value == M? {
        self.init(box: DependencyBox(kind: .optional, type: M.self, default: wrappedValue), absent: .some(nil))
    }
}

extension Dependency where Value == [any Module] {
    /// A collection of module instances this module brings along (all loaded and configured first).
    ///
    /// - Parameter wrappedValue: the modules.
    public init(wrappedValue: [any Module]) {
        self.init(box: DependencyBox(instances: wrappedValue))
    }

    /// A collection built elsewhere, e.g. with a result builder of your own that conforms to
    /// ``DependencyCollectionBuilder``.
    ///
    /// - Parameter dependencies: the modules.
    public init(using dependencies: DependencyCollection) {
        self.init(wrappedValue: dependencies.modules)
    }

    /// A collection written with the ``DependencyBuilder``.
    ///
    /// - Parameter dependencies: the builder closure listing the modules.
    public init(@DependencyBuilder _ dependencies: () -> DependencyCollection) {
        self.init(using: dependencies())
    }
}

/// Upstream's name of the type behind `@Dependency`.
public typealias _DependencyPropertyWrapper<Value> = Dependency<Value>  // swiftlint:disable:this type_name

protocol DependencyDeclaration {
    var dependencyBox: DependencyBox { get }
}

extension Dependency: DependencyDeclaration {
    var dependencyBox: DependencyBox { box }
}
