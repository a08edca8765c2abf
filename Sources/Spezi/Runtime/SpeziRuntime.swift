//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Boots a Configuration: the Linux stand-in for Spezi's app delegate.
///
/// Booting registers the standard and every module (including the ones brought along by
/// collection dependencies), resolves `@Dependency` declarations (creating
/// DefaultInitializable modules on demand), checks `@StandardActor` constraints, orders the
/// modules dependencies-first and calls Module/configure() on each, in that order.
public final class SpeziRuntime {
    /// The configuration being run.
    public let configuration: Configuration
    private var graph = DependencyGraph()
    private var booted = false
    private var stopped = false
    /// The modules in the order they were configured (empty before boot()).
    public private(set) var modules: [any Module] = []

    /// Creates a runtime for a configuration; call boot() to start it.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The configured standard.
    public var standard: any Standard {
        configuration.standard
    }

    /// Resolves, injects and configures all modules.
    ///
    /// - Throws: a SpeziError naming the modules involved.
    public func boot() async throws {
        guard !booted else {
            throw SpeziError.alreadyBooted
        }
        booted = true
        graph.add(configuration.standard)
        for module in configuration.modules {
            graph.add(module)
        }
        try graph.resolve()
        let order = try graph.configurationOrder()
        for node in graph.nodes {
            for box in node.declarations.standards {
                guard box.accepts(configuration.standard) else {
                    throw SpeziError.standardConstraintNotSatisfied(
                        module: node.name,
                        constraint: box.constraintName,
                        standard: moduleName(type(of: configuration.standard))
                    )
                }
                box.standard.withLock { $0 = configuration.standard }
            }
        }
        modules = order.map(\.module)
        for node in order {
            do {
                try await node.module.configure()
            } catch {
                throw SpeziError.moduleConfigurationFailed(module: node.name, underlying: error)
            }
        }
    }

    /// Stops the runtime: every module that is a ``LifecycleHandler`` hears
    /// ``LifecycleHandler/applicationWillTerminate()``, dependents before their dependencies. Call it
    /// once, when the process is about to end (a server on SIGTERM); later calls do nothing.
    public func shutdown() async {
        guard !stopped else { return }
        stopped = true
        for module in modules.reversed() {
            await (module as? any LifecycleHandler)?.applicationWillTerminate()
        }
    }

    /// The module of type `M` (exact type first, then any instance that is an `M`), if booted.
    public func module<M>(_ type: M.Type = M.self) -> M? {
        if let exact = modules.first(where: { ObjectIdentifier(Swift.type(of: $0)) == ObjectIdentifier(M.self) }) {
            return exact as? M
        }
        return modules.lazy.compactMap { $0 as? M }.first
    }
}
