//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Upstream's handle on the running module system, with its synchronous API: the loaded modules,
/// lookup by type, loading and unloading at run time.
///
/// Upstream hands it to the app as an environment value; here ``SpeziAppDelegate/spezi`` gives it,
/// booting the delegate's configuration on first use, or you create one from modules:
///
/// ```swift
/// let spezi = Spezi(standard: ExampleStandard(), modules: [ExampleModule()])
/// let example = spezi.module(ExampleModule.self)     // @_spi(APISupport) import Spezi
/// spezi.loadModule(OtherModule())
/// ```
///
/// It is the synchronous face of a ``SpeziRuntime`` (``runtime``), which does the work and keeps
/// its asynchronous API: each call here returns once the runtime has finished, so a module's
/// `configure()` has run when ``loadModule(_:ownership:)`` returns. The waiting thread runs the
/// runtime's work itself, so callers blocked at once cannot starve Swift's thread pool; but a module
/// whose `configure()` needs an actor the caller holds (the main actor, called from the main actor)
/// cannot be loaded this way: load it with the runtime's `async` methods instead. Loading or unloading from within a `configure()` stops the
/// process, as upstream's does.
///
/// Like ``SpeziRuntime`` and unlike upstream's main-actor class, it is not `Sendable`: use it from
/// one isolation domain at a time.
///
/// A class named as its module shadows the module's name: `Spezi.Configuration` names a member of
/// this class, which has none. Where a type of your own hides one of this module's, write the
/// module selector, `Spezi::Configuration`.
public final class Spezi {
    /// The runtime underneath, for what upstream's class lacks: ``SpeziRuntime/shutdown()`` and the
    /// `async` loading that awaits a module's `configure()` on the caller's actor.
    public let runtime: SpeziRuntime
    /// Whether a load or unload is in progress; another one started meanwhile comes from a
    /// `configure()` (or from another isolation domain, which a non-`Sendable` class rules out).
    private let busy = SpeziLock(false)

    /// Wraps a booted runtime.
    init(booted runtime: SpeziRuntime) {
        self.runtime = runtime
    }

    /// Boots a standard and modules, as ``SpeziRuntime/boot()`` does, and returns once every
    /// module is configured. Upstream keeps this initializer to its own package; it is public here.
    ///
    /// A missing dependency, a cycle, an unmet standard constraint or a failing `configure()` stops
    /// the process with the error's description, as upstream's does.
    ///
    /// - Parameters:
    ///   - standard: the standard every module sees.
    ///   - modules: the modules, in configuration order.
    public convenience init(standard: any Standard, modules: [any Module]) {
        self.init(from: Configuration(standard: standard, ModuleCollection(modules)))
    }

    /// Boots a configuration, as ``init(standard:modules:)`` does.
    ///
    /// - Parameter configuration: the standard and the modules.
    @_spi(APISupport)
    public convenience init(from configuration: Configuration) {
        let runtime = SpeziRuntime(configuration: configuration)
        let handOver = WaitingHandOver(runtime)
        do throws(SpeziError) {
            try SynchronousWait.run { () async throws(SpeziError) in
                try await handOver.value.start()
            }
        } catch {
            preconditionFailure(error.description)
        }
        self.init(booted: runtime)
    }

    /// The configured standard.
    public var standard: any Standard {
        runtime.standard
    }

    /// Itself: upstream's modules reach the instance through `@Application(\.spezi)`.
    public var spezi: Spezi {
        self
    }

    /// The loaded modules, the standard among them, in the order they were configured.
    @_spi(APISupport)
    public var modules: [any Module] {
        _modules
    }

    /// `modules`, under the name upstream's nonisolated code uses.
    @_spi(APISupport)
    public var _modules: [any Module] {  // swiftlint:disable:this identifier_name
        runtime.modules
    }

    /// The first loaded module of exactly the type `M` (a loaded subclass of `M` does not count).
    ///
    /// - Parameter moduleType: the module type (inferred from the context when left out).
    /// - Returns: the module, or nil when none is loaded.
    @_spi(APISupport)
    public func module<M: Module>(_ moduleType: M.Type = M.self) -> M? {
        _module(moduleType)
    }

    /// `module(_:)`, under the name upstream's nonisolated code uses.
    ///
    /// - Parameter moduleType: the module type (inferred from the context when left out).
    /// - Returns: the module, or nil when none is loaded.
    @_spi(APISupport)
    public func _module<M: Module>(_ moduleType: M.Type = M.self) -> M? {  // swiftlint:disable:this identifier_name
        runtime.module(moduleType)
    }

    /// Loads a module with what it brings along and returns once it is configured (see
    /// ``SpeziRuntime/loadModule(_:ownership:)``). Loading an instance that is loaded does nothing.
    ///
    /// An error (a missing dependency, a cycle, an unmet standard constraint, a failing
    /// `configure()`) stops the process with its description, as upstream's does;
    /// `loadModules(_:ownership:)` throws it instead.
    ///
    /// - Parameters:
    ///   - module: the module.
    ///   - ownership: ``ModuleOwnership/spezi`` (kept here) or ``ModuleOwnership/external`` (kept by
    ///     the caller; unloaded when released).
    public func loadModule(_ module: any Module, ownership: ModuleOwnership = .spezi) {
        do throws(SpeziModuleError) {
            try loadModules([module], ownership: ownership)
        } catch {
            preconditionFailure(error.description)
        }
    }

    /// Loads modules as one batch and returns once they are configured; on an error nothing of the
    /// batch stays loaded. Upstream keeps it internal; it is API support here.
    ///
    /// - Parameters:
    ///   - modules: the modules.
    ///   - ownership: who keeps the modules alive.
    /// - Throws: ``SpeziModuleError/dependency(_:)``, ``SpeziModuleError/property(_:)`` or
    ///   ``SpeziModuleError/moduleConfigurationFailed(module:underlying:)``.
    @_spi(APISupport)
    public func loadModules(_ modules: [any Module], ownership: ModuleOwnership) throws(SpeziModuleError) {
        let handOver = WaitingHandOver((runtime, modules))
        try waiting { () throws(SpeziError) in
            try SynchronousWait.run { () async throws(SpeziError) in
                let (runtime, modules) = handOver.value
                try await runtime.load(modules, ownership: ownership)
            }
        }
    }

    /// Unloads a module (see ``SpeziRuntime/unloadModule(_:)``); a module that is not loaded is
    /// left alone. Unloading a module that another loaded module requires stops the process, as
    /// upstream's does; `_unloadModule(_:)` throws instead.
    ///
    /// - Parameter module: the module.
    public func unloadModule(_ module: any Module) {
        do throws(SpeziModuleError) {
            try _unloadModule(module)
        } catch {
            preconditionFailure(error.description)
        }
    }

    /// ``unloadModule(_:)``, throwing where it stops the process. Upstream keeps it internal; it is
    /// API support here.
    ///
    /// - Parameter module: the module.
    /// - Throws: ``SpeziModuleError/moduleStillRequired(module:dependents:)``; then nothing changes.
    @_spi(APISupport)
    public func _unloadModule(_ module: any Module) throws(SpeziModuleError) {  // swiftlint:disable:this identifier_name
        try waiting { () throws(SpeziError) in
            try runtime.unload(module)
        }
    }

    /// Runs `body` as this instance's one call in progress, in upstream's error type.
    private func waiting(_ body: () throws(SpeziError) -> Void) throws(SpeziModuleError) {
        let wasBusy = busy.withLock { busy in
            let wasBusy = busy
            busy = true
            return wasBusy
        }
        precondition(!wasBusy, "Modules cannot be loaded or unloaded from within a module's configure()")
        defer { busy.withLock { $0 = false } }
        do throws(SpeziError) {
            try body()
        } catch {
            throw SpeziModuleError(error)
        }
    }
}
