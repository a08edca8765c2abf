//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The Linux stand-in for Spezi's `SpeziAppDelegate`: subclass it, override configuration and
/// call boot() when the process starts, or read ``spezi``, upstream's spelling, which boots on
/// first use.
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
    private var booted: Spezi?

    /// Creates the delegate.
    public init() {}

    /// The configuration to boot; the default has no modules.
    open var configuration: Configuration {
        Configuration {}
    }

    /// The runtime the last ``boot()`` started, or the one ``spezi`` booted.
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
        booted = nil
        return runtime
    }

    /// The ``Spezi/Spezi`` of this delegate, as upstream's app delegate holds it: the runtime of the
    /// last ``boot()``, or, before any, configuration booted now (synchronously, see
    /// ``Spezi/Spezi/init(standard:modules:)``; an error stops the process, as upstream's does).
    /// A later ``boot()`` replaces it.
    public var spezi: Spezi {
        if let booted {
            return booted
        }
        let spezi: Spezi
        if let runtime {
            spezi = Spezi(booted: runtime)
        } else {
            spezi = Spezi(from: configuration)
            runtime = spezi.runtime
        }
        booted = spezi
        return spezi
    }

    /// The seed's `applicationWillTerminate(_:)`: stops the booted runtime (see
    /// ``SpeziRuntime/shutdown()``). Override it to do more, and call `super`.
    open func applicationWillTerminate() async {
        await runtime?.shutdown()
    }
}
