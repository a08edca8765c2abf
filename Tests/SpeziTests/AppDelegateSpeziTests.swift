//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

@_spi(APISupport) import Spezi
import Testing

private protocol Announcing: Standard {}

private actor AnnouncingStandard: Announcing {}

private actor QuietStandard: Standard {}

/// Asks for the standard through an optional constraint, and untyped.
private final class Listener: Module {
    @StandardActor var announcer: (any Announcing)?
    @StandardActor var any
    var configured = false

    func configure() {
        configured = true
    }
}

/// A delegate whose configuration the test chooses.
private final class ChosenDelegate<S: Standard>: SpeziAppDelegate {
    private let standard: S
    private let chosen: ModuleCollection

    override var configuration: Configuration {
        Configuration(standard: standard, chosen)
    }

    init(standard: S, @ModuleBuilder modules: () -> ModuleCollection) {
        self.standard = standard
        self.chosen = modules()
    }
}

/// `SpeziAppDelegate.spezi`, and `@StandardActor` with an optional constraint reached through it.
@Suite("SpeziAppDelegate.spezi")
struct AppDelegateSpeziTests {
    @Test("spezi boots the configuration on first use, synchronously, and then keeps that instance")
    func bootsOnFirstUse() {
        let log = ConfigureLog()
        let delegate = ChosenDelegate(standard: DefaultStandard()) {
            Top(log: log)
            Middle(log: log)
        }
        #expect(delegate.runtime == nil)
        let spezi = delegate.spezi
        #expect(log.all == ["Middle(leaf configured: true)", "Top"])
        #expect(delegate.spezi === spezi)
        #expect(delegate.runtime === spezi.runtime)
        #expect(spezi.module(Top.self)?.middle === spezi.module(Middle.self))
        #expect(log.all.count == 2)
    }

    @Test("after boot(), spezi is the face of the booted runtime; another boot() replaces it")
    func followsBoot() async throws {
        let delegate = ChosenDelegate(standard: DefaultStandard()) { Leaf() }
        let first = try await delegate.boot()
        let spezi = delegate.spezi
        #expect(spezi.runtime === first)
        let second = try await delegate.boot()
        #expect(delegate.spezi.runtime === second)
        #expect(delegate.spezi !== spezi)
    }

    @Test("an optional @StandardActor constraint the standard meets: the module is found, the standard injected")
    func optionalConstraintMet() throws {
        let standard = AnnouncingStandard()
        let delegate = ChosenDelegate(standard: standard) { Listener() }
        let listener = try #require(delegate.spezi.module(Listener.self))
        #expect(listener.configured)
        #expect(listener.announcer === standard)
        #expect(listener.any === standard)
    }

    @Test("an optional @StandardActor constraint the standard misses: the module is found, the property nil")
    func optionalConstraintMissed() throws {
        let standard = QuietStandard()
        let delegate = ChosenDelegate(standard: standard) { Listener() }
        let listener = try #require(delegate.spezi.module(Listener.self))
        #expect(listener.configured)
        #expect(listener.announcer == nil)
        #expect(listener.any === standard)

        let direct = Spezi(standard: QuietStandard(), modules: [Listener()])
        #expect(direct.module(Listener.self)?.configured == true)
        #expect(direct.module(Listener.self)?.announcer == nil)
    }
}
