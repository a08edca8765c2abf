//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

extension SpeziRuntime {
    /// Loads a module into the booted runtime, with what it brings along (its `load` and
    /// collection dependencies, the default instances and on-demand modules it needs).
    ///
    /// Its dependencies are resolved against the loaded modules first; it is configured after
    /// them. Loaded modules' optional dependencies on its type that were `nil` now return it, and
    /// their `@Collect` properties receive what it provides. Loading an instance that is already
    /// loaded does nothing.
    ///
    /// - Parameters:
    ///   - module: the module.
    ///   - ownership: ``ModuleOwnership/spezi`` (the runtime keeps it) or ``ModuleOwnership/external``
    ///     (the caller does; it is unloaded when released).
    /// - Throws: SpeziError/notBooted before boot(); SpeziError/missingDependency(module:dependency:),
    ///   SpeziError/dependencyCycle(_:), SpeziError/standardConstraintNotSatisfied(module:constraint:standard:)
    ///   or SpeziError/moduleConfigurationFailed(module:underlying:); then nothing of it stays loaded.
    public func loadModule(_ module: any Module, ownership: ModuleOwnership = .spezi) async throws {
        guard !entries.isEmpty else {
            throw SpeziError.notBooted
        }
        try await load([module], ownership: ownership)
    }

    /// Unloads a module. The modules loaded on its behalf (default instances, on-demand modules,
    /// its `load` and collection dependencies) go with it unless another loaded module still
    /// depends on them, optionally or not. Optional dependencies on it switch to the next loaded
    /// module of its type, or to nil, and its provided values leave every `@Collect`. Unloading a
    /// module that is not loaded does nothing.
    ///
    /// - Parameter module: the module.
    /// - Throws: SpeziError/moduleStillRequired(module:dependents:) when a loaded module has a
    ///   required dependency on it; then nothing changes.
    public func unloadModule(_ module: any Module) throws {
        try unload(module)
    }

    /// ``unloadModule(_:)``, with the type of its error spelled out.
    func unload(_ module: any Module) throws(SpeziError) {
        purgeReleased()
        let id = ObjectIdentifier(module)
        guard let entry = entries.first(where: { $0.id == id }) else {
            return
        }
        let dependents = entries.filter { other in
            other.id != id && other.declarations.dependencies.contains { $0.isStrong && $0.modules.contains { ObjectIdentifier($0) == id } }
        }
        if !dependents.isEmpty {
            throw SpeziError.moduleStillRequired(module: entry.name, dependents: dependents.map(\.name))
        }
        entries.removeAll { $0.id == id }
        releaseOrphans()
        refresh()
    }
}
