//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import Synchronization

/// Loads `modules` as an app would (dependencies first, values offered and collected, the
/// standard injected, every `configure()` run) and returns once they are ready, for tests that
/// use modules without booting an app. Upstream's `SpeziTesting` spelling, kept synchronous like
/// upstream's: the runtime's work, which is asynchronous here, runs on a task of its own while the
/// calling thread waits. A module whose `configure()` needs the main actor cannot be resolved this
/// way (the main actor is the one waiting); boot a `SpeziRuntime` in an async test instead.
///
/// - Parameters:
///   - standard: the standard the modules see.
///   - modules: the modules, written with the `ModuleBuilder`.
@MainActor
public func withDependencyResolution<S: Standard>(standard: S, @ModuleBuilder _ modules: () -> ModuleCollection) {
    DependencyResolution.resolve(Configuration(standard: standard, modules()))
}

/// ``withDependencyResolution(standard:_:)`` with a `DefaultStandard`.
///
/// - Parameter modules: the modules, written with the `ModuleBuilder`.
@MainActor
public func withDependencyResolution(@ModuleBuilder _ modules: () -> ModuleCollection) {
    DependencyResolution.resolve(Configuration(modules))
}

enum DependencyResolution {
    /// The runtimes booted here, kept for the rest of the process as an app keeps its own (the
    /// modules' injected dependencies live as long as their runtime).
    private static let booted = Mutex<[RuntimeBox]>([])

    /// Boots `configuration` on a task of its own and waits for it; a failure stops the test run
    /// with the runtime's error, as upstream's does.
    static func resolve(_ configuration: Configuration) {
        let box = RuntimeBox(SpeziRuntime(configuration: configuration))
        let done = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        Task.detached {
            do {
                try await box.runtime.boot()
            } catch {
                failure.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) {
            preconditionFailure("dependency resolution failed: \(error)")
        }
        booted.withLock { $0.append(box) }
    }
}

/// Hands the runtime to the task that boots it.
// Unchecked Sendable: the runtime is used by the booting task alone while the caller waits for it,
// and only kept (never used) afterwards.
final class RuntimeBox: @unchecked Sendable {
    let runtime: SpeziRuntime

    init(_ runtime: SpeziRuntime) {
        self.runtime = runtime
    }
}
