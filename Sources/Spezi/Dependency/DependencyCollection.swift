//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Module instances a module brings along through `@Dependency var modules: [any Module]`.
///
/// Build one with the ``DependencyBuilder``, or with a result builder of your own that conforms to
/// ``DependencyCollectionBuilder`` and constrains what may be listed:
///
/// ```swift
/// @resultBuilder
/// enum StorageBuilder: DependencyCollectionBuilder {
///     static func buildExpression<M: Module & StorageModule>(_ module: M) -> DependencyCollection {
///         DependencyCollection(module)
///     }
/// }
/// ```
public struct DependencyCollection {
    private(set) var modules: [any Module]

    /// An empty collection.
    public init() {
        self.modules = []
    }

    /// A collection of the given modules, in order.
    ///
    /// - Parameter entry: the modules.
    public init<each M: Module>(_ entry: repeat each M) {
        var modules: [any Module] = []
        for module in repeat each entry {
            modules.append(module)
        }
        self.modules = modules
    }

    /// A collection of one module, made by `entry`.
    ///
    /// - Parameter entry: makes the module.
    @available(*, deprecated, message: "Use init(_:) with the module itself")
    public init<M: Module>(singleEntry entry: @escaping () -> M) {
        self.modules = [entry()]
    }

    /// A collection of one module.
    ///
    /// - Parameter entry: the module.
    @available(*, deprecated, message: "Use init(_:) with the module itself")
    public init<M: Module>(singleEntry entry: @autoclosure @escaping () -> M) {
        self.modules = [entry()]
    }

    /// Whether the collection has no modules.
    public var isEmpty: Bool { modules.isEmpty }

    /// The number of modules.
    public var count: Int { modules.count }

    /// Appends the modules of another collection.
    ///
    /// - Parameter collection: the modules to append.
    public mutating func append(contentsOf collection: DependencyCollection) {
        modules.append(contentsOf: collection.modules)
    }

    /// Appends one module.
    ///
    /// - Parameter module: the module to append.
    public mutating func append<M: Module>(_ module: M) {
        modules.append(module)
    }
}

/// The building blocks of a result builder producing a ``DependencyCollection``: conform a
/// `@resultBuilder` type to it and add a `buildExpression` for what it accepts.
public protocol DependencyCollectionBuilder {}

extension DependencyCollectionBuilder {
    /// Several collections in sequence.
    ///
    /// - Parameter components: the collections.
    /// - Returns: their modules in order.
    public static func buildBlock(_ components: DependencyCollection...) -> DependencyCollection {
        buildArray(components)
    }

    /// The first branch of an `if/else`.
    ///
    /// - Parameter component: the branch's collection.
    /// - Returns: the same collection.
    public static func buildEither(first component: DependencyCollection) -> DependencyCollection {
        component
    }

    /// The second branch of an `if/else`.
    ///
    /// - Parameter component: the branch's collection.
    /// - Returns: the same collection.
    public static func buildEither(second component: DependencyCollection) -> DependencyCollection {
        component
    }

    /// An `if` without `else`.
    ///
    /// - Parameter component: the collection, when the condition held.
    /// - Returns: the collection, or an empty one.
    public static func buildOptional(_ component: DependencyCollection?) -> DependencyCollection {
        component ?? DependencyCollection()
    }

    /// An availability check.
    ///
    /// - Parameter component: the collection.
    /// - Returns: the same collection.
    public static func buildLimitedAvailability(_ component: DependencyCollection) -> DependencyCollection {
        component
    }

    /// A `for` loop.
    ///
    /// - Parameter components: one collection per iteration.
    /// - Returns: their modules in order.
    public static func buildArray(_ components: [DependencyCollection]) -> DependencyCollection {
        components.reduce(into: DependencyCollection()) { $0.append(contentsOf: $1) }
    }
}

/// The result builder of `@Dependency var modules: [any Module]`: lists any modules.
@resultBuilder
public enum DependencyBuilder: DependencyCollectionBuilder {
    /// One module.
    ///
    /// - Parameter expression: the module.
    /// - Returns: a collection holding it.
    public static func buildExpression<M: Module>(_ expression: M) -> DependencyCollection {
        DependencyCollection(expression)
    }
}
