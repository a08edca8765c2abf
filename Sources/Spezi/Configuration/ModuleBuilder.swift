//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A list of modules, produced by the ModuleBuilder.
public final class ModuleCollection {
    let modules: [any Module]

    /// Creates a collection of the given modules.
    public init(_ modules: [any Module]) {
        self.modules = modules
    }
}

/// A result builder that collects Modules; supports `if`, `if/else` and `for`.
@resultBuilder
public enum ModuleBuilder {
    /// One module.
    public static func buildExpression<M: Module>(_ module: M) -> ModuleCollection {
        ModuleCollection([module])
    }

    /// An existing collection.
    public static func buildExpression(_ collection: ModuleCollection) -> ModuleCollection {
        collection
    }

    /// Several collections in sequence.
    public static func buildBlock(_ components: ModuleCollection...) -> ModuleCollection {
        ModuleCollection(components.flatMap(\.modules))
    }

    /// An `if` without `else`.
    public static func buildOptional(_ component: ModuleCollection?) -> ModuleCollection {
        component ?? ModuleCollection([])
    }

    /// The first branch of an `if/else`.
    public static func buildEither(first component: ModuleCollection) -> ModuleCollection {
        component
    }

    /// The second branch of an `if/else`.
    public static func buildEither(second component: ModuleCollection) -> ModuleCollection {
        component
    }

    /// A `for` loop.
    public static func buildArray(_ components: [ModuleCollection]) -> ModuleCollection {
        ModuleCollection(components.flatMap(\.modules))
    }

    /// An availability check.
    public static func buildLimitedAvailability(_ component: ModuleCollection) -> ModuleCollection {
        component
    }
}
