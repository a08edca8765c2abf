//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The Linux stand-in for Spezi's `SpeziAppDelegate`: subclass it, override configuration and
/// call boot() when the process starts.
///
/// ```swift
/// final class ServerDelegate: SpeziAppDelegate {
///     override var configuration: Configuration {
///         Configuration(standard: ExampleStandard()) { ExampleModule() }
///     }
/// }
/// let runtime = try await ServerDelegate().boot()
/// ```
open class SpeziAppDelegate {
    /// Creates the delegate.
    public init() {}

    /// The configuration to boot; the default has no modules.
    open var configuration: Configuration {
        Configuration {}
    }

    /// The runtime the last ``boot()`` started.
    public private(set) var runtime: SpeziRuntime?

    /// Boots configuration in a new SpeziRuntime and returns it.
    ///
    /// - Returns: the booted runtime, also kept in ``runtime``.
    /// - Throws: the ``SpeziError`` of ``SpeziRuntime/boot()`` when a dependency is missing or circular,
    ///   a standard constraint is not met, or a module's `configure()` fails.
    public func boot() async throws -> SpeziRuntime {
        let runtime = SpeziRuntime(configuration: configuration)
        try await runtime.boot()
        self.runtime = runtime
        return runtime
    }

    /// The seed's `applicationWillTerminate(_:)`: stops the booted runtime (see
    /// ``SpeziRuntime/shutdown()``). Override it to do more, and call `super`.
    open func applicationWillTerminate() async {
        await runtime?.shutdown()
    }
}
