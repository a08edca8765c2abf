//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Resolves the dependencies of modules without loading them, under upstream's name: fills their
/// `@Dependency` properties (creating default instances and `DefaultInitializable` modules as
/// loading would) and orders them dependencies first. Nothing is configured, no standard is
/// injected and nothing is collected; ``Spezi/Spezi`` and ``SpeziRuntime`` do that.
///
/// ```swift
/// let manager = DependencyManager([ExampleModule()])
/// try manager.resolve()
/// for module in manager.initializedModules { /* dependencies first */ }
/// ```
public final class DependencyManager {
    private let modules: [any Module]
    private let existing: [any Module]
    /// After ``resolve()``: the modules and what they brought along, each after its dependencies
    /// (the `existing` modules are not repeated). Empty before.
    public private(set) var initializedModules: [any Module] = []

    /// A resolution of `modules` against modules that are loaded already.
    ///
    /// - Parameters:
    ///   - modules: the modules to resolve.
    ///   - existing: modules whose instances the dependencies may take, as if they were loaded.
    public init(_ modules: [any Module], existing: [any Module] = []) {
        self.modules = modules
        self.existing = existing
    }

    /// Resolves and injects the dependencies.
    ///
    /// - Throws: ``DependencyManagerError/missingRequiredModule(module:requiredModule:)`` or
    ///   ``DependencyManagerError/searchStackCycle(module:requestedModule:dependencyChain:)``; then
    ///   no dependency was injected.
    public func resolve() throws(DependencyManagerError) {
        var resolver = ModuleResolver(existing: existing)
        for module in modules {
            resolver.add(module)
        }
        let order: [ModuleNode]
        do throws(SpeziError) {
            try resolver.resolve()
            order = try resolver.configurationOrder()
        } catch {
            throw DependencyManagerError(error)
        }
        resolver.inject()
        initializedModules = order.map(\.module)
    }
}
