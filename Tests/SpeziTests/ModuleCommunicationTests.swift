//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import Testing

private protocol Greeting {
    var text: String { get }
}

private struct Hello: Greeting {
    let text: String
}

private final class Offers: Module {
    @Provide var number: Int = 1
    @Provide var maybe: Int? = 2
    @Provide var nothing: Int?
    @Provide var several: [Int] = []
    @Provide var label: String = "initial"
    @Provide var unrelated: Double = 3.5
    @Provide var greeting: any Greeting = Hello(text: "hi")

    init() {
        label = "set in init"
        several = [3, 4]
    }
}

private final class OffersToo: Module {
    @Dependency var offers = Offers()
    @Provide var number: Int = 10
}

private final class Collects: Module {
    @Collect var numbers: [Int]
    @Collect var labels: [String]
    @Collect var ids: [UUID]
    @Collect var greetings: [any Greeting]
    var seenInConfigure: [Int] = []

    func configure() {
        seenInConfigure = numbers
    }
}

/// Collects the numbers and requires `OffersToo`, so it is configured after both offering modules.
private final class CollectsLast: Module {
    @Dependency(OffersToo.self) var offersToo
    @Collect var numbers: [Int]
}

@Suite("Module communication: @Provide and @Collect")
struct ModuleCommunicationTests {
    @Test("single values, optionals and arrays are collected by their type; nil provides nothing")
    func valuesByType() async throws {
        let collects = Collects()
        let runtime = SpeziRuntime(
            configuration: Configuration {
                Offers()
                collects
            })
        try await runtime.boot()
        #expect(collects.numbers == [1, 2, 3, 4])
        #expect(collects.labels == ["set in init"])
        #expect(collects.ids.isEmpty)
        #expect(collects.greetings.map(\.text) == ["hi"])
        #expect(collects.seenInConfigure == [1, 2, 3, 4])
    }

    @Test("a collector configured first still sees the values of every module of the batch, in dependency order")
    func dependencyOrder() async throws {
        let collects = Collects()
        let last = CollectsLast()
        // declared first, with the offering modules after it: values are gathered before configure()
        let runtime = SpeziRuntime(
            configuration: Configuration {
                collects
                last
                OffersToo()
            })
        try await runtime.boot()
        // Offers comes in as OffersToo's default instance and is configured before it
        #expect(collects.seenInConfigure == [1, 2, 3, 4, 10])
        #expect(last.numbers == [1, 2, 3, 4, 10])
    }

    @Test("values follow modules loaded and unloaded later")
    func dynamicValues() async throws {
        let collects = Collects()
        let runtime = SpeziRuntime(configuration: Configuration { collects })
        try await runtime.boot()
        #expect(collects.numbers.isEmpty)
        let offers = Offers()
        try await runtime.loadModule(offers)
        #expect(collects.numbers == [1, 2, 3, 4])
        let offersToo = OffersToo()
        try await runtime.loadModule(offersToo)
        // OffersToo's default Offers is not loaded: the loaded Offers satisfies it
        #expect(offersToo.offers === offers)
        #expect(collects.numbers == [1, 2, 3, 4, 10])
        try runtime.unloadModule(offersToo)
        #expect(collects.numbers == [1, 2, 3, 4])
        try runtime.unloadModule(offers)
        #expect(collects.numbers.isEmpty)
        #expect(collects.labels.isEmpty)
    }
}
