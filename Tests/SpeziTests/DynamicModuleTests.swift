//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import Testing

private final class Engine: Module {
    @Provide var power: Int = 1
    var configureCount = 0

    func configure() {
        configureCount += 1
    }
}

private final class Part: Module {
    @Provide var power: Int = 2
}

/// Requires an Engine and brings a Part as its default instance.
private final class Car: Module {
    @Dependency(Engine.self) var engine
    @Dependency var part = Part()
}

private final class Watcher: Module {
    @Dependency(Engine.self) var engine: Engine?
    @Dependency(Part.self) var part: Part?
    @Collect var power: [Int]
}

private final class NeedsMissing: Module {
    @Dependency(Unloadable.self) var missing
}

private final class Unloadable: Module {}

@Suite("Dynamic modules: loadModule, unloadModule, ModuleOwnership")
struct DynamicModuleTests {
    private func bootWithWatcher() async throws -> (SpeziRuntime, Watcher) {
        let watcher = Watcher()
        let runtime = SpeziRuntime(configuration: Configuration { watcher })
        try await runtime.boot()
        return (runtime, watcher)
    }

    @Test("an optional dependency sees a module appear when it is loaded and go when it is unloaded")
    func optionalFollowsLoading() async throws {
        let (runtime, watcher) = try await bootWithWatcher()
        #expect(watcher.engine == nil)
        let engine = Engine()
        try await runtime.loadModule(engine)
        #expect(watcher.engine === engine)
        #expect(engine.configureCount == 1)
        #expect(watcher.power == [1])
        // loading the same instance again changes nothing
        try await runtime.loadModule(engine)
        #expect(engine.configureCount == 1)
        #expect(runtime.modules.count { $0 is Engine } == 1)
        try runtime.unloadModule(engine)
        #expect(watcher.engine == nil)
        #expect(watcher.power.isEmpty)
        #expect(runtime.module(Engine.self) == nil)
        // unloading what is not loaded does nothing
        try runtime.unloadModule(engine)
    }

    @Test("a module still required cannot be unloaded; the error names it and its dependents")
    func stillRequired() async throws {
        let (runtime, _) = try await bootWithWatcher()
        let engine = Engine()
        try await runtime.loadModule(engine)
        let car = Car()
        try await runtime.loadModule(car)
        #expect(car.engine === engine)
        let error = #expect(throws: SpeziError.self) { try runtime.unloadModule(engine) }
        guard case let .moduleStillRequired(module, dependents) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(module == "Engine")
        #expect(dependents == ["Car"])
        #expect(runtime.module(Engine.self) === engine)
        // once the dependent is gone, the module can go
        try runtime.unloadModule(car)
        try runtime.unloadModule(engine)
        #expect(runtime.module(Engine.self) == nil)
    }

    @Test("unloading a module takes along what was loaded for it, unless another module still uses it")
    func implicitModulesGo() async throws {
        let watcher = Watcher()
        let engine = Engine()
        let runtime = SpeziRuntime(configuration: Configuration { engine })
        try await runtime.boot()
        let car = Car()
        try await runtime.loadModule(car)
        let part = try #require(runtime.module(Part.self))
        #expect(car.part === part)
        try runtime.unloadModule(car)
        // the default Part was loaded for Car only; the explicitly loaded Engine stays
        #expect(runtime.module(Part.self) == nil)
        #expect(runtime.module(Engine.self) === engine)

        let second = Car()
        try await runtime.loadModule(second)
        try await runtime.loadModule(watcher)
        let secondPart = try #require(runtime.module(Part.self))
        #expect(watcher.part === secondPart)
        try runtime.unloadModule(second)
        // the Watcher's optional dependency keeps the Part loaded
        #expect(runtime.module(Part.self) === secondPart)
        #expect(watcher.power == [1, 2])
    }

    @Test("an external module is held weakly: released, it is unloaded and optional dependents see nil")
    func externalOwnership() async throws {
        let (runtime, watcher) = try await bootWithWatcher()
        let kept = Engine()
        func loadTemporary() async throws {
            let temporary = Engine()
            try await runtime.loadModule(temporary, ownership: .external)
            try await runtime.loadModule(kept)
            #expect(watcher.engine === temporary)
            #expect(runtime.modules.count { $0 is Engine } == 2)
        }
        try await loadTemporary()
        // the first Engine is gone: the watcher switches to the next loaded one
        #expect(runtime.modules.count { $0 is Engine } == 1)
        #expect(watcher.engine === kept)
        #expect(watcher.power == [1])
    }

    @Test("an optional dependency on a released external module takes the next loaded one at once")
    func externalReplacedAtOnce() async throws {
        let (runtime, watcher) = try await bootWithWatcher()
        let second = Engine()
        let third = Engine()
        func loadTemporary() async throws {
            let temporary = Engine()
            try await runtime.loadModule(temporary, ownership: .external)
            try await runtime.loadModule(second)
            try await runtime.loadModule(third)
            #expect(watcher.engine === temporary)
        }
        try await loadTemporary()
        // no call into the runtime in between
        #expect(watcher.engine === second)
        try runtime.unloadModule(second)
        #expect(watcher.engine === third)
    }

    @Test("a released external module takes what was loaded on its behalf alone along, as unloading would")
    func externalTakesItsDependencies() async throws {
        let engine = Engine()
        let runtime = SpeziRuntime(configuration: Configuration { engine })
        try await runtime.boot()
        func loadTemporaryCar() async throws {
            let car = Car()
            try await runtime.loadModule(car, ownership: .external)
            #expect(runtime.module(Part.self) === car.part)
            #expect(runtime.modules.count == 4)
        }
        try await loadTemporaryCar()
        #expect(runtime.modules.count == 2)
        #expect(runtime.module(Part.self) == nil)
        #expect(runtime.module(Engine.self) === engine)
    }

    @Test("a failed load leaves nothing loaded; loading before boot is an error")
    func failedLoad() async throws {
        let early = SpeziRuntime(configuration: Configuration {})
        await #expect(throws: SpeziError.self) { try await early.loadModule(Engine()) }

        let (runtime, _) = try await bootWithWatcher()
        let before = runtime.modules.count
        let error = await #expect(throws: SpeziError.self) { try await runtime.loadModule(NeedsMissing()) }
        guard case let .missingDependency(module, dependency) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(module == "NeedsMissing")
        #expect(dependency == "Unloadable")
        #expect(runtime.modules.count == before)
    }
}
