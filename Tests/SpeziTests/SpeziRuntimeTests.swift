//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Testing

@testable import Spezi

@Suite("Spezi runtime")
struct SpeziRuntimeTests {
    @Test("modules are configured dependencies-first, whatever the declaration order")
    func dependencyOrder() async throws {
        let log = ConfigureLog()
        let leaf = Leaf(log: log)
        let runtime = SpeziRuntime(
            configuration: Configuration {
                Top(log: log)
                Middle(log: log)
                leaf
            })
        try await runtime.boot()
        #expect(log.all == ["Leaf", "Middle(leaf configured: true)", "Top"])
        let top = try #require(runtime.module(Top.self))
        #expect(top.leaf === leaf)
        #expect(top.middle.leaf === leaf)
        #expect(runtime.modules.first is DefaultStandard)
    }

    @Test("a DefaultInitializable dependency is created on demand")
    func createdOnDemand() async throws {
        let log = ConfigureLog()
        let runtime = SpeziRuntime(configuration: Configuration { Middle(log: log) })
        try await runtime.boot()
        let middle = try #require(runtime.module(Middle.self))
        #expect(middle.leaf.configured)
        #expect(runtime.module(Leaf.self) === middle.leaf)
        #expect(log.all == ["Middle(leaf configured: true)"])
    }

    @Test("a missing required dependency is an error naming both modules")
    func missingDependency() async throws {
        let runtime = SpeziRuntime(configuration: Configuration { NeedsUnconfigured() })
        let error = await #expect(throws: SpeziError.self) { try await runtime.boot() }
        guard case let .missingDependency(module, dependency) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(module == "NeedsUnconfigured")
        #expect(dependency == "Unconfigured")
        #expect(error?.description.contains("NeedsUnconfigured requires Unconfigured") == true)
    }

    @Test("optional dependencies are nil when absent and injected when present")
    func optionalDependencies() async throws {
        let leaf = Leaf()
        let module = WithOptional()
        let runtime = SpeziRuntime(
            configuration: Configuration {
                module
                leaf
            })
        try await runtime.boot()
        #expect(module.other == nil)
        #expect(module.leaf === leaf)
        // an optional dependency is not created on demand
        #expect(runtime.module(Unconfigured.self) == nil)
    }

    @Test("a dependency cycle is an error naming the cycle")
    func cycle() async throws {
        let runtime = SpeziRuntime(
            configuration: Configuration {
                CycleA()
                CycleB()
            })
        let error = await #expect(throws: SpeziError.self) { try await runtime.boot() }
        guard case let .dependencyCycle(names) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(names == ["CycleA", "CycleB", "CycleA"])
    }

    @Test("@StandardActor gives access to the standard through its constraint")
    func standardConstraint() async throws {
        let standard = ExampleStandard()
        let runtime = SpeziRuntime(configuration: Configuration(standard: standard) { UsesStandard() })
        try await runtime.boot()
        #expect(await standard.recorded == ["configured UsesStandard"])
        #expect(runtime.standard === standard)
    }

    @Test("a standard that misses a constraint is a clear error")
    func unsatisfiedConstraint() async throws {
        let runtime = SpeziRuntime(configuration: Configuration { UsesStandard() })
        let error = await #expect(throws: SpeziError.self) { try await runtime.boot() }
        guard case let .standardConstraintNotSatisfied(module, constraint, standard) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(module == "UsesStandard")
        #expect(constraint.contains("ExampleConstraint"))
        #expect(standard == "DefaultStandard")
    }

    @Test("collection dependencies register and configure their modules first")
    func collection() async throws {
        let log = ConfigureLog()
        let bundle = Bundle(log: log)
        let runtime = SpeziRuntime(configuration: Configuration { bundle })
        try await runtime.boot()
        #expect(log.all == ["Leaf", "Middle(leaf configured: true)", "Bundle"])
        #expect(bundle.modules.count == 2)
        #expect(runtime.module(Middle.self)?.leaf === bundle.modules.first as? Leaf)
    }

    @Test("a throwing configure() aborts the boot naming the module")
    func failingConfigure() async throws {
        let runtime = SpeziRuntime(configuration: Configuration { Failing() })
        let error = await #expect(throws: SpeziError.self) { try await runtime.boot() }
        guard case let .moduleConfigurationFailed(module, underlying) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(module == "Failing")
        #expect(underlying is BrokenConfiguration)
    }

    @Test("actors can be modules with dependencies")
    func actorModule() async throws {
        let module = ActorModule()
        let runtime = SpeziRuntime(configuration: Configuration { module })
        try await runtime.boot()
        #expect(await module.sawLeaf)
    }

    @Test("the result builder handles conditions and loops; booting twice fails")
    func builderAndDelegate() async throws {
        final class Delegate: SpeziAppDelegate {
            let include: Bool
            init(include: Bool) {
                self.include = include
            }

            override var configuration: Configuration {
                Configuration(standard: ExampleStandard()) {
                    if include {
                        Leaf()
                    } else {
                        Unconfigured()
                    }
                    for _ in 0..<2 {
                        WithOptional()
                    }
                }
            }
        }
        let runtime = try await Delegate(include: true).boot()
        #expect(runtime.module(Leaf.self) != nil)
        #expect(runtime.module(Unconfigured.self) == nil)
        // a second instance of the same type is configured too; lookups find the first
        #expect(runtime.modules.count { $0 is WithOptional } == 2)
        #expect(runtime.module(WithOptional.self)?.leaf === runtime.module(Leaf.self))
        let other = try await Delegate(include: false).boot()
        #expect(other.module(Unconfigured.self) != nil)
        await #expect(throws: SpeziError.self) { try await runtime.boot() }
    }
}
