//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Boots a Configuration: the Linux stand-in for Spezi's app delegate.
///
/// Booting loads the standard and every module (including the ones brought along by `load` and
/// collection dependencies and the default instances of dependencies), resolves `@Dependency`
/// declarations (creating DefaultInitializable modules on demand), checks `@StandardActor`
/// constraints, hands the values of every `@Provide` to every `@Collect`, and calls
/// Module/configure() on each module, dependencies first. Modules can be loaded and unloaded
/// later with ``loadModule(_:ownership:)`` and ``unloadModule(_:)``.
public final class SpeziRuntime {
    /// One loaded module: kept strongly, or weakly for ``ModuleOwnership/external``.
    final class Entry {
        let id: ObjectIdentifier
        let name: String
        let declarations: ModuleDeclarations
        let isImplicit: Bool
        private let strong: (any Module)?
        private weak var weak: AnyObject?

        init(_ node: ModuleNode, ownership: ModuleOwnership) {
            self.id = node.id
            self.name = node.name
            self.declarations = node.declarations
            self.isImplicit = node.isImplicit
            self.strong = ownership == .spezi || node.isImplicit ? node.module : nil
            self.weak = node.module
        }

        var module: (any Module)? {
            strong ?? (weak as? any Module)
        }
    }

    /// The configuration being run.
    public let configuration: Configuration
    var entries: [Entry] = []
    private var booted = false
    private var stopped = false

    /// Creates a runtime for a configuration; call boot() to start it.
    ///
    /// - Parameter configuration: the standard and the modules to boot.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The configured standard.
    public var standard: any Standard {
        configuration.standard
    }

    /// The loaded modules in the order they were configured (empty before boot()). An external
    /// module that was released is dropped here, and what depended on it optionally is updated.
    public var modules: [any Module] {
        purgeReleased()
        return entries.compactMap(\.module)
    }

    /// Loads, injects and configures the standard and all modules of the configuration, then calls
    /// ``LifecycleHandler/willFinishLaunchingWithOptions()`` on every module that is a LifecycleHandler.
    ///
    /// - Throws: a SpeziError naming the modules involved.
    public func boot() async throws {
        try await start()
    }

    /// ``boot()``, with the type of its error spelled out.
    func start() async throws(SpeziError) {
        guard !booted else {
            throw SpeziError.alreadyBooted
        }
        booted = true
        try await load([configuration.standard] + configuration.modules, ownership: .spezi)
        for module in modules {
            await (module as? any LifecycleHandler)?.willFinishLaunchingWithOptions()
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

    /// The first loaded module of exactly the type `M`, as upstream looks modules up: with only a
    /// subclass of `M` loaded, the answer is nil. When `M` is a protocol (`(any Service).self`),
    /// the first module conforming to it.
    ///
    /// - Parameter type: the module type.
    /// - Returns: the module, or nil when none is loaded.
    public func module<M>(_ type: M.Type = M.self) -> M? {
        if M.self is any Module.Type {
            return modules.first { ObjectIdentifier(Swift.type(of: $0)) == ObjectIdentifier(M.self) } as? M
        }
        return modules.lazy.compactMap { $0 as? M }.first
    }

    /// Loads a batch: resolves it against the loaded modules, injects, configures it dependencies
    /// first, then updates the optional dependencies and collected values of the others. On an
    /// error nothing of the batch stays loaded.
    func load(_ requested: [any Module], ownership: ModuleOwnership) async throws(SpeziError) {
        purgeReleased()
        var resolver = ModuleResolver(existing: modules)
        for module in requested {
            resolver.add(module)
        }
        try resolver.resolve()
        let order = try resolver.configurationOrder()
        for node in order {
            for box in node.declarations.standards {
                guard box.accepts(configuration.standard) else {
                    throw SpeziError.standardConstraintNotSatisfied(
                        module: node.name, constraint: box.constraintName, standard: moduleName(type(of: configuration.standard)))
                }
            }
        }
        resolver.inject()
        let previous = entries
        let added = order.map { Entry($0, ownership: ownership) }
        entries += added
        for entry in added {
            for box in entry.declarations.standards {
                box.standard.withLock { $0 = configuration.standard }
            }
        }
        for (node, entry) in zip(order, added) {
            inject(collectsOf: entry)
            do {
                try await node.module.configure()
            } catch {
                entries = previous
                throw SpeziError.moduleConfigurationFailed(module: node.name, underlying: error)
            }
        }
        refresh()
    }

    /// Drops the entries of external modules that were released, and what was loaded on their
    /// behalf only, as ``unloadModule(_:)`` would.
    func purgeReleased() {
        guard entries.contains(where: { $0.module == nil }) else {
            return
        }
        entries.removeAll { $0.module == nil }
        releaseOrphans()
        refresh()
    }

    /// Drops, repeatedly, the modules loaded on another's behalf that no loaded module depends on
    /// any more (optionally or not).
    func releaseOrphans() {
        while true {
            let needed = Set(
                entries.flatMap { other in
                    other.declarations.dependencies.flatMap { $0.modules.map { ObjectIdentifier($0) } }
                })
            let orphans = entries.filter { $0.isImplicit && !needed.contains($0.id) }
            guard !orphans.isEmpty else {
                break
            }
            entries.removeAll { orphan in orphans.contains { $0.id == orphan.id } }
        }
    }

    /// Points optional dependencies at loaded modules (keeping a module that is still loaded, the
    /// others of its type in line behind it, for when it is released) and hands every module the
    /// values provided now.
    func refresh() {
        let loaded = modules
        let ids = Set(loaded.map { ObjectIdentifier($0) })
        for entry in entries {
            for box in entry.declarations.dependencies where box.kind == .optional {
                var candidates = loaded.filter(box.matches)
                if let current = box.modules.first, ids.contains(ObjectIdentifier(current)) {
                    candidates.removeAll { $0 === current }
                    candidates.insert(current, at: 0)
                }
                box.inject(candidates)
            }
            inject(collectsOf: entry)
        }
    }

    private func inject(collectsOf entry: Entry) {
        guard !entry.declarations.collects.isEmpty else {
            return
        }
        let provides = entries.filter { $0.module != nil }.flatMap(\.declarations.provides)
        for storage in entry.declarations.collects {
            let values = provides.filter { $0.elementType == storage.elementType }.flatMap { $0.elements() }
            storage.values.withLock { $0 = values }
        }
    }
}
