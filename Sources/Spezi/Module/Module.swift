//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A software subsystem that can be placed into a Configuration.
///
/// A module declares what it needs with Dependency and StandardActor property wrappers.
/// The SpeziRuntime injects those and then calls configure() on every module,
/// dependencies first.
public protocol Module: AnyObject {
    /// Called once while the runtime boots, after all dependencies were injected and configured.
    ///
    /// Keep it lightweight; throwing aborts the boot with SpeziError/moduleConfigurationFailed(module:underlying:).
    ///
    /// - Throws: any error that makes the module unusable; the runtime stops booting and reports it
    ///   wrapped in ``SpeziError/moduleConfigurationFailed(module:underlying:)``.
    func configure() async throws
}

extension Module {
    /// The default does nothing.
    ///
    /// - Throws: never; a module that can fail implements its own `configure()`.
    public func configure() async throws {}
}

/// A module that can be created with no arguments.
///
/// A required Dependency on such a module that no configuration supplies is created on demand.
public protocol DefaultInitializable {
    /// Creates an instance with default settings.
    init()
}

/// A readable name of a module type, used in errors.
func moduleName(_ type: Any.Type) -> String {
    String(describing: type)
}
