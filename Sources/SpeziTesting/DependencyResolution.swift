//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import Synchronization

/// Loads `modules` as an app would (dependencies first, values offered and collected, the
/// standard injected, every `configure()` run) and returns once they are ready, for tests that
/// use modules without booting an app. Upstream's `SpeziTesting` spelling, synchronous like
/// upstream's: it creates a `Spezi` (`Spezi(standard:modules:)`), which waits for the runtime's
/// asynchronous work. A module whose `configure()` needs the main actor cannot be resolved this
/// way (the main actor is the one waiting); boot a `SpeziRuntime` in an async test instead.
///
/// - Parameters:
///   - standard: the standard the modules see.
///   - modules: the modules, written with the `ModuleBuilder`.
@MainActor
public func withDependencyResolution<S: Standard>(standard: S, @ModuleBuilder _ modules: () -> ModuleCollection) {
    DependencyResolution.keep(Spezi(standard: standard, modules: modules().elements))
}

/// ``withDependencyResolution(standard:_:)`` with a `DefaultStandard`.
///
/// - Parameter modules: the modules, written with the `ModuleBuilder`.
@MainActor
public func withDependencyResolution(@ModuleBuilder _ modules: () -> ModuleCollection) {
    withDependencyResolution(standard: DefaultStandard(), modules)
}

enum DependencyResolution {
    /// The instances created here, kept for the rest of the process as an app keeps its own (what
    /// the runtime loaded on the modules' behalf lives as long as it).
    private static let booted = Mutex<[Kept]>([])

    static func keep(_ spezi: Spezi) {
        let kept = Kept(spezi)
        booted.withLock { $0.append(kept) }
    }
}

/// Keeps a `Spezi` alive.
// Unchecked Sendable: the instance is only kept, never used, once it is stored.
final class Kept: @unchecked Sendable {
    let spezi: Spezi

    init(_ spezi: Spezi) {
        self.spezi = spezi
    }
}
