//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Why ``Spezi/Spezi`` could not load or unload a module: upstream's name and grouping of the
/// failures that ``SpeziRuntime`` reports as ``SpeziError``.
///
/// `loadModules(_:ownership:)` and `_unloadModule(_:)` throw it; `loadModule(_:ownership:)` and
/// `unloadModule(_:)` stop the process with its description, as upstream's do.
public enum SpeziModuleError: Error, CustomStringConvertible {
    /// A dependency is missing or the dependencies form a cycle.
    case dependency(DependencyManagerError)
    /// A property wrapper could not be filled (a `@StandardActor` constraint the standard does not meet).
    case property(SpeziPropertyError)
    /// `module` cannot be unloaded: the `dependents` (loaded modules) require it.
    case moduleStillRequired(module: String, dependents: [String])
    /// `configure()` of `module` threw. Upstream has no such case: its `configure()` cannot throw.
    case moduleConfigurationFailed(module: String, underlying: any Error)

    /// The error of a ``SpeziRuntime`` in upstream's grouping.
    ///
    /// - Parameter error: an error of loading or unloading; ``SpeziError/alreadyBooted`` and
    ///   ``SpeziError/notBooted`` cannot occur there (a ``Spezi/Spezi`` is booted once, when it is made).
    init(_ error: SpeziError) {
        switch error {
        case .missingDependency, .dependencyCycle:
            self = .dependency(DependencyManagerError(error))
        case let .standardConstraintNotSatisfied(_, constraint, standard):
            self = .property(.unsatisfiedStandardConstraint(constraint: constraint, standard: standard))
        case let .moduleStillRequired(module, dependents):
            self = .moduleStillRequired(module: module, dependents: dependents)
        case let .moduleConfigurationFailed(module, underlying):
            self = .moduleConfigurationFailed(module: module, underlying: underlying)
        case .alreadyBooted, .notBooted:
            preconditionFailure("Spezi boots its runtime once, when it is created: \(error)")
        }
    }

    /// A readable description naming the modules involved.
    public var description: String {
        switch self {
        case let .dependency(error):
            error.description
        case let .property(error):
            error.description
        case let .moduleStillRequired(module, dependents):
            "Module \(module) cannot be unloaded: \(dependents.joined(separator: ", ")) still require it"
        case let .moduleConfigurationFailed(module, underlying):
            "Configuring module \(module) failed: \(underlying)"
        }
    }
}

/// A dependency that cannot be satisfied, under upstream's name: thrown by ``DependencyManager``
/// and carried by ``SpeziModuleError/dependency(_:)``.
public enum DependencyManagerError: Error, CustomStringConvertible {
    /// `module` depends on `requestedModule`, which depends back on it: the `dependencyChain` leads
    /// from `requestedModule` to `module`, and `module`'s dependency on `requestedModule` closes the cycle.
    case searchStackCycle(module: String, requestedModule: String, dependencyChain: [String])
    /// `module` requires `requiredModule`, which is not configured and cannot be created on demand.
    case missingRequiredModule(module: String, requiredModule: String)

    /// The dependency error of a ``SpeziRuntime`` under upstream's name.
    ///
    /// - Parameter error: ``SpeziError/missingDependency(module:dependency:)`` or
    ///   ``SpeziError/dependencyCycle(_:)``; the resolver throws nothing else.
    init(_ error: SpeziError) {
        switch error {
        case let .missingDependency(module, dependency):
            self = .missingRequiredModule(module: module, requiredModule: dependency)
        case let .dependencyCycle(names) where names.count >= 2:
            // The runtime names the cycle with its first module repeated at the end.
            let chain = Array(names.dropLast())
            self = .searchStackCycle(module: chain[chain.count - 1], requestedModule: names[names.count - 1], dependencyChain: chain)
        default:
            preconditionFailure("not a dependency error: \(error)")
        }
    }

    /// A readable description naming the modules involved.
    public var description: String {
        switch self {
        case let .searchStackCycle(module, requestedModule, dependencyChain):
            "Dependency cycle: \(module) depends on \(requestedModule), along \(dependencyChain.joined(separator: " -> ")) -> \(requestedModule)"
        case let .missingRequiredModule(module, requiredModule):
            "Module \(module) requires \(requiredModule), which is not configured and is not DefaultInitializable"
        }
    }
}

/// A property wrapper of a module that could not be filled, under upstream's name.
public enum SpeziPropertyError: Error, CustomStringConvertible {
    /// A `@StandardActor` asks for `constraint`, which the configured `standard` does not conform to.
    case unsatisfiedStandardConstraint(constraint: String, standard: String)

    /// A readable description naming the constraint and the standard.
    public var description: String {
        switch self {
        case let .unsatisfiedStandardConstraint(constraint, standard):
            "The standard \(standard) does not conform to \(constraint), which a module's @StandardActor requires"
        }
    }
}
