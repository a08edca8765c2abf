//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

@_spi(APISupport) import Spezi
import Testing

private final class Pump: Module {
    @Provide var flow: Int = 3
    var configureCount = 0

    func configure() {
        configureCount += 1
    }
}

private final class Gauge: Module {
    @Dependency(Pump.self) var pump: Pump?
    @Collect var flows: [Int]
}

/// Awaits in `configure()`, so that its configuration needs an executor to come back to.
private final class Sleeper: Module {
    var configured = false

    func configure() async throws {
        await Task.yield()
        _ = await Counter().next()
        configured = true
    }
}

private actor Counter {
    private var count = 0

    func next() -> Int {
        count += 1
        return count
    }
}

/// Upstream's synchronous spelling of the runtime: `Spezi` and its error type.
@Suite("Spezi, the class: upstream's synchronous API over the runtime")
struct SpeziClassTests {
    @Test("Spezi(standard:modules:) returns with every module configured, dependencies first, the standard among them")
    func boots() {
        let log = ConfigureLog()
        let leaf = Leaf(log: log)
        let standard = ExampleStandard()
        let spezi = Spezi(standard: standard, modules: [Top(log: log), Middle(log: log), leaf])
        #expect(log.all == ["Leaf", "Middle(leaf configured: true)", "Top"])
        #expect(spezi.modules.count == 4)
        #expect(spezi.modules.contains { $0 === standard })
        #expect(spezi._modules.count == 4)
        #expect(spezi.standard === standard)
        #expect(spezi.spezi === spezi)
        #expect(spezi.runtime.module(Leaf.self) === leaf)
    }

    @Test("module(_:) finds a module of exactly the type asked for, inferred or given; a subclass does not count")
    func lookup() {
        let sub = SubModule()
        let spezi = Spezi(standard: DefaultStandard(), modules: [sub, Unconfigured()])
        #expect(spezi.module(SubModule.self) === sub)
        #expect(spezi.module(BaseModule.self) == nil)
        let inferred: Unconfigured? = spezi.module()
        #expect(inferred != nil)
        #expect(spezi._module(SubModule.self) === sub)
        let missing: Leaf? = spezi.module()
        #expect(missing == nil)
    }

    @Test("loadModule and unloadModule return once done: optional dependencies and collected values follow")
    func loadAndUnload() {
        let gauge = Gauge()
        let spezi = Spezi(standard: DefaultStandard(), modules: [gauge])
        #expect(gauge.pump == nil)
        #expect(gauge.flows.isEmpty)

        let pump = Pump()
        spezi.loadModule(pump)
        #expect(pump.configureCount == 1)
        #expect(gauge.pump === pump)
        #expect(gauge.flows == [3])
        spezi.loadModule(pump)
        #expect(pump.configureCount == 1)

        spezi.unloadModule(pump)
        #expect(gauge.pump == nil)
        #expect(gauge.flows.isEmpty)
        #expect(spezi.module(Pump.self) == nil)
        spezi.unloadModule(pump)
        #expect(spezi.modules.count == 2)
    }

    @Test("a module loaded with external ownership goes when its owner lets go of it")
    func externalOwnership() {
        let gauge = Gauge()
        let spezi = Spezi(standard: DefaultStandard(), modules: [gauge])
        func loadAndRelease() {
            let pump = Pump()
            spezi.loadModule(pump, ownership: .external)
            #expect(gauge.pump === pump)
            #expect(spezi.modules.count == 3)
        }
        loadAndRelease()
        #expect(spezi.modules.count == 2)
        #expect(gauge.pump == nil)
        #expect(gauge.flows.isEmpty)
    }

    @Test("loadModules throws upstream's errors, naming the modules, and keeps nothing of the batch")
    func loadErrors() throws {
        let spezi = Spezi(standard: DefaultStandard(), modules: [])

        let missing = try #require(throws: SpeziModuleError.self) {
            try spezi.loadModules([NeedsUnconfigured()], ownership: .spezi)
        }
        guard case let .dependency(.missingRequiredModule(module, requiredModule)) = missing else {
            Issue.record("unexpected \(missing)")
            return
        }
        #expect(module == "NeedsUnconfigured")
        #expect(requiredModule == "Unconfigured")
        #expect(missing.description.contains("NeedsUnconfigured requires Unconfigured"))

        let cycle = try #require(throws: SpeziModuleError.self) {
            try spezi.loadModules([CycleA(), CycleB()], ownership: .spezi)
        }
        guard case let .dependency(.searchStackCycle(closing, requested, chain)) = cycle else {
            Issue.record("unexpected \(cycle)")
            return
        }
        #expect(closing == "CycleB")
        #expect(requested == "CycleA")
        #expect(chain == ["CycleA", "CycleB"])

        let constraint = try #require(throws: SpeziModuleError.self) {
            try spezi.loadModules([UsesStandard()], ownership: .spezi)
        }
        guard case let .property(.unsatisfiedStandardConstraint(name, standard)) = constraint else {
            Issue.record("unexpected \(constraint)")
            return
        }
        #expect(name == "ExampleConstraint")
        #expect(standard == "DefaultStandard")

        let failing = try #require(throws: SpeziModuleError.self) {
            try spezi.loadModules([Leaf(), Failing()], ownership: .spezi)
        }
        guard case let .moduleConfigurationFailed(failed, underlying) = failing else {
            Issue.record("unexpected \(failing)")
            return
        }
        #expect(failed == "Failing")
        #expect(underlying is BrokenConfiguration)

        #expect(spezi.modules.count == 1)
    }

    @Test("_unloadModule throws moduleStillRequired, naming the module and its dependents, and changes nothing")
    func stillRequired() throws {
        let leaf = Leaf()
        let spezi = Spezi(standard: DefaultStandard(), modules: [Middle(log: ConfigureLog()), leaf])
        let error = try #require(throws: SpeziModuleError.self) {
            try spezi._unloadModule(leaf)
        }
        guard case let .moduleStillRequired(module, dependents) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(module == "Leaf")
        #expect(dependents == ["Middle"])
        #expect(error.description.contains("Middle"))
        #expect(spezi.module(Leaf.self) === leaf)
    }

    @Test("synchronous calls from many tasks at once do not starve the cooperative pool")
    func manyCallersAtOnce() async {
        let configured = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let spezi = Spezi(standard: DefaultStandard(), modules: [Sleeper()])
                    let sleeper = Sleeper()
                    spezi.loadModule(sleeper)
                    return spezi.module(Sleeper.self)?.configured == true && sleeper.configured
                }
            }
            return await group.reduce(into: 0) { count, configured in count += configured ? 1 : 0 }
        }
        #expect(configured == 8)
    }
}
