//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A list of modules, produced by the ModuleBuilder.
public final class ModuleCollection {
    /// The modules, in declaration order (upstream's name; there it is visible inside its package only).
    public let elements: [any Module]

    /// Creates a collection of the given modules.
    ///
    /// - Parameter modules: the modules, in declaration order.
    public init(_ modules: [any Module]) {
        self.elements = modules
    }
}

/// A result builder that collects Modules; supports `if`, `if/else` and `for`.
@resultBuilder
public enum ModuleBuilder {
    /// One module.
    ///
    /// - Parameter module: a module written in the builder's body.
    /// - Returns: a collection holding that module alone.
    public static func buildExpression<M: Module>(_ module: M) -> ModuleCollection {
        ModuleCollection([module])
    }

    /// An existing collection.
    ///
    /// - Parameter collection: a collection written in the builder's body.
    /// - Returns: the same collection.
    public static func buildExpression(_ collection: ModuleCollection) -> ModuleCollection {
        collection
    }

    /// Several collections in sequence.
    ///
    /// - Parameter components: the collections of the block's statements.
    /// - Returns: their modules in one collection, in order.
    public static func buildBlock(_ components: ModuleCollection...) -> ModuleCollection {
        ModuleCollection(components.flatMap(\.elements))
    }

    /// An `if` without `else`.
    ///
    /// - Parameter component: the branch's modules, or `nil` when the condition was false.
    /// - Returns: the branch's modules, or an empty collection.
    public static func buildOptional(_ component: ModuleCollection?) -> ModuleCollection {
        component ?? ModuleCollection([])
    }

    /// The first branch of an `if/else`.
    ///
    /// - Parameter component: the modules of the branch taken.
    /// - Returns: the same collection.
    public static func buildEither(first component: ModuleCollection) -> ModuleCollection {
        component
    }

    /// The second branch of an `if/else`.
    ///
    /// - Parameter component: the modules of the branch taken.
    /// - Returns: the same collection.
    public static func buildEither(second component: ModuleCollection) -> ModuleCollection {
        component
    }

    /// A `for` loop.
    ///
    /// - Parameter components: one collection per iteration.
    /// - Returns: the modules of every iteration in one collection, in order.
    public static func buildArray(_ components: [ModuleCollection]) -> ModuleCollection {
        ModuleCollection(components.flatMap(\.elements))
    }

    /// An availability check.
    ///
    /// - Parameter component: the modules inside the availability check.
    /// - Returns: the same collection.
    public static func buildLimitedAvailability(_ component: ModuleCollection) -> ModuleCollection {
        component
    }
}
