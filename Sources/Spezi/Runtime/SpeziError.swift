//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Why a SpeziRuntime could not boot, load or unload a module.
public enum SpeziError: Error, CustomStringConvertible {
    /// `module` requires `dependency`, which is not configured and cannot be created on demand.
    case missingDependency(module: String, dependency: String)
    /// The modules depend on each other in a cycle (the first module is repeated at the end).
    case dependencyCycle([String])
    /// `module` needs a standard conforming to `constraint`, but the configured standard does not.
    case standardConstraintNotSatisfied(module: String, constraint: String, standard: String)
    /// `configure()` of `module` threw.
    case moduleConfigurationFailed(module: String, underlying: any Error)
    /// `boot()` was called twice.
    case alreadyBooted
    /// `module` cannot be unloaded: the `dependents` (loaded modules) require it.
    case moduleStillRequired(module: String, dependents: [String])
    /// The runtime was not booted yet (``SpeziRuntime/loadModule(_:ownership:)`` needs a booted runtime).
    case notBooted

    /// A readable description naming the modules involved.
    public var description: String {
        switch self {
        case let .missingDependency(module, dependency):
            "Module \(module) requires \(dependency), which is not configured and is not DefaultInitializable"
        case let .dependencyCycle(modules):
            "Dependency cycle between modules: \(modules.joined(separator: " -> "))"
        case let .standardConstraintNotSatisfied(module, constraint, standard):
            "Module \(module) requires a standard conforming to \(constraint), but \(standard) does not"
        case let .moduleConfigurationFailed(module, underlying):
            "Configuring module \(module) failed: \(underlying)"
        case .alreadyBooted:
            "The Spezi runtime was already booted"
        case let .moduleStillRequired(module, dependents):
            "Module \(module) cannot be unloaded: \(dependents.joined(separator: ", ")) still require it"
        case .notBooted:
            "The Spezi runtime was not booted yet"
        }
    }
}
