//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import SpeziTesting
import Synchronization
import Testing

/// `SpeziTesting.withDependencyResolution`: modules made by a test get their dependencies, the
/// standard and their `configure()` without an app, synchronously, as upstream's helper does.
@Suite("Dependency resolution for tests (SpeziTesting)")
struct DependencyResolutionTests {
    final class Clock: Module, DefaultInitializable, @unchecked Sendable {
        let ticks = Mutex(0)
        init() {}
    }

    final class Reporter: Module, @unchecked Sendable {
        @Dependency(Clock.self) var clock
        @StandardActor var standard
        let configured = Mutex(0)

        func configure() async throws {
            clock.ticks.withLock { $0 += 1 }
            configured.withLock { $0 += 1 }
        }
    }

    actor Recorder: Standard {}

    @MainActor
    @Test("a module's required dependency is created, injected and configured first; its own configure() runs once; the standard is the one given")
    func resolves() {
        let reporter = Reporter()
        let recorder = Recorder()
        withDependencyResolution(standard: recorder) {
            reporter
        }
        #expect(reporter.configured.withLock { $0 } == 1)
        #expect(reporter.clock.ticks.withLock { $0 } == 1)
        #expect(reporter.standard as? Recorder === recorder)
    }

    @MainActor
    @Test("without a standard: a DefaultStandard, and two resolutions stay apart")
    func defaultStandard() {
        let first = Reporter()
        let second = Reporter()
        withDependencyResolution { first }
        withDependencyResolution { second }
        #expect(first.standard is DefaultStandard)
        #expect(first.clock !== second.clock)
        #expect(first.configured.withLock { $0 } == 1 && second.configured.withLock { $0 } == 1)
    }
}
