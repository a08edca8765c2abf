//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

@testable import Spezi

/// Records the order in which modules were configured.
final class ConfigureLog: @unchecked Sendable {
    static let shared = ConfigureLog()
    private let entries = SpeziLock<[String]>([])

    func append(_ entry: String) {
        entries.withLock { $0.append(entry) }
    }

    var all: [String] { entries.current }
}

protocol ExampleConstraint: Standard {
    func record(_ value: String) async
}

actor ExampleStandard: Standard, ExampleConstraint {
    private(set) var recorded: [String] = []

    func record(_ value: String) {
        recorded.append(value)
    }
}

final class Leaf: Module, DefaultInitializable {
    let log: ConfigureLog
    var configured = false

    init() {
        self.log = ConfigureLog()
    }

    init(log: ConfigureLog) {
        self.log = log
    }

    func configure() {
        configured = true
        log.append("Leaf")
    }
}

final class Middle: Module {
    @Dependency(Leaf.self) var leaf
    let log: ConfigureLog

    init(log: ConfigureLog) {
        self.log = log
    }

    func configure() {
        log.append("Middle(leaf configured: \(leaf.configured))")
    }
}

final class Top: Module {
    @Dependency(Middle.self) var middle
    @Dependency(Leaf.self) var leaf
    let log: ConfigureLog

    init(log: ConfigureLog) {
        self.log = log
    }

    func configure() {
        log.append("Top")
    }
}

final class Unconfigured: Module {}

final class NeedsUnconfigured: Module {
    @Dependency(Unconfigured.self) var other
}

final class WithOptional: Module {
    @Dependency(Unconfigured.self) var other: Unconfigured?
    @Dependency(Leaf.self) var leaf: Leaf?
}

final class CycleA: Module {
    @Dependency(CycleB.self) var other
}

final class CycleB: Module {
    @Dependency(CycleA.self) var other
}

final class UsesStandard: Module {
    @StandardActor var standard: any ExampleConstraint

    func configure() async {
        await standard.record("configured UsesStandard")
    }
}

final class Bundle: Module {
    @Dependency var modules: [any Module]

    init(log: ConfigureLog) {
        _modules = Dependency {
            Leaf(log: log)
            Middle(log: log)
        }
    }

    func configure() {
        (modules.first as? Leaf)?.log.append("Bundle")
    }
}

struct BrokenConfiguration: Error {}

final class Failing: Module {
    func configure() throws {
        throw BrokenConfiguration()
    }
}

actor ActorModule: Module {
    @Dependency(Leaf.self) private var leaf
    private(set) var sawLeaf = false

    func configure() {
        sawLeaf = leaf.configured
    }
}
