//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import Testing

/// A type of this file that hides the module's `Configuration`, as an app's own type might.
private struct Configuration {
    let owner = "the app"
}

/// A protocol of this file that hides the module's `Module`.
private protocol Module {}

private final class Lamp: Spezi::Module, Module {
    var lit = false

    func configure() {
        lit = true
    }
}

/// The module `Spezi` has a class `Spezi`, as upstream's has: `Spezi.Configuration` would look for a
/// member of the class. Where a name of the module is hidden, the module selector reaches it.
@Suite("Spezi, the class, in Spezi, the module")
struct ModuleNameTests {
    @Test("Spezi:: names the module's types where a type of the app hides them; Spezi alone names the class")
    func moduleSelector() async throws {
        let lamp = Lamp()
        let configuration = Spezi::Configuration { lamp }
        #expect(Configuration().owner == "the app")
        #expect(configuration.modules.count == 1)
        let runtime = Spezi::SpeziRuntime(configuration: configuration)
        try await runtime.boot()
        #expect(lamp.lit)

        let spezi: Spezi = Spezi(standard: DefaultStandard(), modules: [Lamp()])
        #expect(spezi.runtime.modules.count == 2)
        #expect(type(of: spezi) == Spezi::Spezi.self)
    }
}
