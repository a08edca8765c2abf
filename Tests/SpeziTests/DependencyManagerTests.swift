//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import Testing

/// Upstream's resolution without loading: `DependencyManager`, its error type, and the builder's
/// `ModuleCollection.elements` it is usually handed.
@Suite("DependencyManager and ModuleCollection.elements")
struct DependencyManagerTests {
    @Test("DependencyManager injects dependencies and orders modules dependencies first, configuring none")
    func dependencyManager() throws {
        let log = ConfigureLog()
        let top = Top(log: log)
        let manager = DependencyManager([top, Middle(log: log)])
        #expect(manager.initializedModules.isEmpty)
        try manager.resolve()
        #expect(manager.initializedModules.map { String(describing: type(of: $0)) } == ["Leaf", "Middle", "Top"])
        #expect(top.middle.leaf === top.leaf)
        #expect(log.all.isEmpty)

        let existing = Leaf()
        let againstLoaded = DependencyManager([Middle(log: log)], existing: [existing])
        try againstLoaded.resolve()
        #expect(againstLoaded.initializedModules.count == 1)
        #expect((againstLoaded.initializedModules.first as? Middle)?.leaf === existing)
    }

    @Test("DependencyManager throws DependencyManagerError for a cycle and for a missing module")
    func dependencyManagerErrors() throws {
        let cycle = try #require(throws: DependencyManagerError.self) {
            try DependencyManager([CycleA(), CycleB()]).resolve()
        }
        guard case let .searchStackCycle(module, requestedModule, dependencyChain) = cycle else {
            Issue.record("unexpected \(cycle)")
            return
        }
        #expect(module == "CycleB")
        #expect(requestedModule == "CycleA")
        #expect(dependencyChain == ["CycleA", "CycleB"])
        #expect(cycle.description.contains("CycleA -> CycleB -> CycleA"))

        let missing = try #require(throws: DependencyManagerError.self) {
            try DependencyManager([NeedsUnconfigured()]).resolve()
        }
        guard case let .missingRequiredModule(module, requiredModule) = missing else {
            Issue.record("unexpected \(missing)")
            return
        }
        #expect(module == "NeedsUnconfigured")
        #expect(requiredModule == "Unconfigured")
    }

    @Test("ModuleCollection.elements lists what the builder collected, in order, ready for a DependencyManager")
    func elements() throws {
        let first = Leaf()
        let second = Leaf()
        @ModuleBuilder
        func modules(includeSecond: Bool) -> ModuleCollection {
            first
            if includeSecond {
                second
            }
            for _ in 0..<2 {
                Unconfigured()
            }
        }
        let all = modules(includeSecond: true).elements
        #expect(all.count == 4)
        #expect(all[0] === first)
        #expect(all[1] === second)
        #expect(all[2...].allSatisfy { $0 is Unconfigured })
        #expect(modules(includeSecond: false).elements.count == 3)
        #expect(ModuleCollection([second]).elements.first === second)

        let log = ConfigureLog()
        @ModuleBuilder
        func withDependencies() -> ModuleCollection {
            Top(log: log)
            Middle(log: log)
        }
        let manager = DependencyManager(withDependencies().elements)
        try manager.resolve()
        #expect(manager.initializedModules.map { String(describing: type(of: $0)) } == ["Leaf", "Middle", "Top"])
    }
}
