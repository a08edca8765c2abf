//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import Testing

private final class Numbered: Module {
    let number: Int
    init(_ number: Int) {
        self.number = number
    }
}

private final class Helper: Module {}

private final class WithDefault: Module {
    @Dependency var numbered = Numbered(1)
}

private final class AlsoWithDefault: Module {
    @Dependency var numbered = Numbered(2)
}

/// Loads Numbered(42) itself; its nested module declares Numbered(12) and Helper() as defaults.
private final class Outer: Module {
    final class Nested: Module, DefaultInitializable {
        @Dependency var numbered = Numbered(12)
        @Dependency var helper = Helper()
        init() {}
    }

    @Dependency(Helper.self) var helper  // no default: the nested module's default satisfies it
    @Dependency(Nested.self) var nested
    @Dependency(Numbered.self) var numbered

    init() {
        _numbered = Dependency(load: Numbered(42))
    }
}

private final class OptionalWithDefault: Module {
    @Dependency(Numbered.self) var numbered: Numbered?

    init(default number: Int?) {
        if let number {
            _numbered = Dependency(wrappedValue: Numbered(number))
        }
    }
}

/// An optional dependency without default, next to a module whose default supplies it.
private final class OptionalFromNested: Module {
    final class Nested: Module {
        @Dependency var numbered = Numbered(23)
    }

    @Dependency(Numbered.self) var numbered: Numbered?
    @Dependency var nested = Nested()
}

protocol Storing: Module {}

private final class Disk: Module, Storing {}

private final class Memory: Module, Storing {}

@resultBuilder
private enum StoringBuilder: DependencyCollectionBuilder {
    static func buildExpression<M: Storing>(_ module: M) -> DependencyCollection {
        DependencyCollection(module)
    }
}

private final class Storages: Module {
    @Dependency var storages: [any Module]

    init(@StoringBuilder _ storages: () -> DependencyCollection) {
        _storages = Dependency(using: storages())
    }
}

private final class Bundled: Module {
    @Dependency var modules: [any Module]

    /// Leaves `modules` unset: an empty collection, as upstream's.
    init() {}

    init(withHelper: Bool, count: Int) {
        _modules = Dependency {
            if withHelper {
                Helper()
            }
            for number in 0..<count {
                Numbered(number)
            }
        }
    }
}

class BaseModule: Module, DefaultInitializable {
    required init() {}
}

final class SubModule: BaseModule {}

private final class NeedsBase: Module {
    @Dependency(BaseModule.self) var base
}

protocol GreetingConstraint: Standard {
    func greet() async -> String
}

actor GreetingStandard: GreetingConstraint {
    func greet() -> String { "hello" }
}

private final class StandardReader: Module {
    @StandardActor var any: any Standard
    @StandardActor var greeting: (any GreetingConstraint)?
    var greeted: String?

    func configure() async {
        greeted = await greeting?.greet()
    }
}

@Suite("Dependency variants, exact-type lookup, several instances of a type")
struct DependencyVariantTests {
    private func boot(_ configuration: Configuration) async throws -> SpeziRuntime {
        let runtime = SpeziRuntime(configuration: configuration)
        try await runtime.boot()
        return runtime
    }

    @Test("a default instance is loaded only when no module of the type is; several defaults share the first")
    func defaultInstances() async throws {
        let alone = try await boot(Configuration { WithDefault() })
        #expect(alone.module(WithDefault.self)?.numbered.number == 1)

        let configured = Numbered(7)
        let runtime = try await boot(
            Configuration {
                WithDefault()
                AlsoWithDefault()
                configured
            })
        #expect(runtime.module(WithDefault.self)?.numbered === configured)
        #expect(runtime.module(AlsoWithDefault.self)?.numbered === configured)

        let shared = try await boot(
            Configuration {
                WithDefault()
                AlsoWithDefault()
            })
        #expect(shared.modules.count { $0 is Numbered } == 1)
        #expect(shared.module(AlsoWithDefault.self)?.numbered.number == 1)
    }

    @Test("Dependency(load:) loads its instance before nested defaults are considered")
    func loadDependency() async throws {
        let runtime = try await boot(Configuration { Outer() })
        let outer = try #require(runtime.module(Outer.self))
        #expect(outer.numbered.number == 42)
        #expect(outer.nested.numbered === outer.numbered)
        #expect(outer.helper === outer.nested.helper)
        #expect(runtime.modules.count { $0 is Numbered } == 1)
    }

    @Test("an optional dependency takes a configured module first, then its default, else nil")
    func optionalWithDefault() async throws {
        let none = try await boot(Configuration { OptionalWithDefault(default: nil) })
        #expect(none.module(OptionalWithDefault.self)?.numbered == nil)

        let defaulted = try await boot(Configuration { OptionalWithDefault(default: 2) })
        #expect(defaulted.module(OptionalWithDefault.self)?.numbered?.number == 2)

        let configured = try await boot(
            Configuration {
                Numbered(4)
                OptionalWithDefault(default: 3)
            })
        #expect(configured.module(OptionalWithDefault.self)?.numbered?.number == 4)
        #expect(configured.modules.count { $0 is Numbered } == 1)

        let nested = try await boot(Configuration { OptionalFromNested() })
        #expect(nested.module(OptionalFromNested.self)?.numbered?.number == 23)
    }

    @Test("DependencyCollection: a custom builder with Dependency(using:), DependencyBuilder with if and for, unset is empty")
    func collections() async throws {
        let storages = Storages {
            Disk()
            Memory()
        }
        let runtime = try await boot(Configuration { storages })
        #expect(storages.storages.count == 2)
        #expect(runtime.module(Disk.self) === storages.storages.first)
        #expect(runtime.module((any Storing).self) === storages.storages.first)

        var collection = DependencyCollection(Disk(), Memory())
        collection.append(Helper())
        collection.append(contentsOf: DependencyCollection())
        #expect(collection.count == 3)
        #expect(!collection.isEmpty)

        let bundled = Bundled(withHelper: true, count: 3)
        let other = try await boot(Configuration { bundled })
        #expect(bundled.modules.count == 4)
        // every listed module is loaded, also several of one type
        #expect(other.modules.count { $0 is Numbered } == 3)
        let empty = Bundled(withHelper: false, count: 0)
        _ = try await boot(Configuration { empty })
        #expect(empty.modules.isEmpty)
        let unset = Bundled()
        _ = try await boot(Configuration { unset })
        #expect(unset.modules.isEmpty)
    }

    @Test("lookup is by exact type: a subclass does not satisfy its base class")
    func exactType() async throws {
        let sub = SubModule()
        let runtime = try await boot(
            Configuration {
                sub
                NeedsBase()
            })
        #expect(runtime.module(SubModule.self) === sub)
        let base = try #require(runtime.module(BaseModule.self))
        #expect(base !== sub)
        #expect(runtime.module(NeedsBase.self)?.base === base)

        let onlySub = try await boot(Configuration { SubModule() })
        #expect(onlySub.module(BaseModule.self) == nil)
    }

    @Test("a second instance of a module type is configured; dependencies get the first")
    func secondInstance() async throws {
        let first = Numbered(1)
        let second = Numbered(2)
        let runtime = try await boot(
            Configuration {
                first
                second
                WithDefault()
            })
        #expect(runtime.modules.count { $0 is Numbered } == 2)
        #expect(runtime.module(WithDefault.self)?.numbered === first)
        #expect(runtime.module(Numbered.self) === first)
    }

    @Test("@StandardActor as any Standard, and as an optional constraint")
    func standardVariants() async throws {
        let reader = StandardReader()
        let standard = GreetingStandard()
        _ = try await boot(Configuration(standard: standard) { reader })
        #expect(reader.any === standard)
        #expect(reader.greeting === standard)
        #expect(reader.greeted == "hello")

        let plain = StandardReader()
        let runtime = try await boot(Configuration { plain })
        #expect(plain.greeting == nil)
        #expect(plain.greeted == nil)
        #expect(plain.any === runtime.standard)
    }
}
