//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import Projections
import Spezi
import SpeziAccount
import SpeziAccountStore
import SpeziAccountTesting
import Testing

/// A projection written in a test: how many events of each type the log holds.
struct TypeCounter: Projection {
    var name: String { "type-counter" }
    var fingerprint: String { "type-counter v1" }
    var databaseNames: [String] { ["counts"] }
    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        let key = Array(record.type.utf8)
        let count = try state.get("counts", key: key).map { Int(String(decoding: $0, as: UTF8.self)) ?? 0 } ?? 0
        try state.put("counts", key: key, value: Array(String(count + 1).utf8))
    }
}

@Suite("The test kit (SpeziAccountTesting), used on the store")
struct TestKitTests {
    @Test("given events, when an operation, then the appended events or the error")
    func givenWhenThen() async throws {
        let scenario = try await LogScenario()
        try await scenario.given([
            StreamEvent("a1", .accountCreated(userId: "ada@example.org", passwordHash: nil, isAnonymous: false, values: [:]), actor: "v1 app"),
            StreamEvent("a1", .detailsModified(modified: ["genderIdentity": Data("\"female\"".utf8)], removed: []))
        ])
        #expect(try scenario.store.details(of: "a1")?.genderIdentity == .female)

        let deletion = await scenario.when { try await $0.delete("a1") }
        #expect(deletion.error == nil)
        #expect(deletion.types == ["account.deleted"])
        #expect(deletion.events.map(\.accountId) == ["a1"])

        let refused = await scenario.when { try await $0.updateGenderIdentity(of: "a1", to: .male) }
        #expect(refused.error as? AccountStoreError == .accountNotFound("a1"))
        #expect(refused.events.isEmpty)
        await scenario.remove()
    }

    @Test("a recorded log (an export with its vault) replays through a new key set's upcasters, and operations go on from it")
    func recordedLog() async throws {
        // Last month's production: an older app wrote the biography under another name.
        let production = try await LogScenario()
        try await production.given([
            StreamEvent("a1", .accountCreated(userId: "ada@example.org", passwordHash: nil, isAnonymous: false, values: [:])),
            StreamEvent("a1", .detailsModified(modified: ["bio": Data("\"Analyst\"".utf8)], removed: []), actor: "v1 app"),
            StreamEvent(
                "a2", .accountCreated(userId: "alan@example.org", passwordHash: nil, isAnonymous: false, values: ["bio": Data("\"Logician\"".utf8)]))
        ])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("recording-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let export = folder.appendingPathComponent("production.jsonl")
        try await writeExport(of: production.store.log, to: export)
        let vault = folder.appendingPathComponent("vault")
        try #require(production.store.accounts.vault).copy(to: vault.path)
        let head = try await production.store.log.verify(progress: nil).headHash
        let sealed = try await production.store.log.read(from: 1, limit: 10).allSatisfy { $0.payload.first == 2 }
        #expect(sealed, "the recorded payloads are sealed: the vault is needed")
        await production.remove()

        // The next version renames the key; replaying the recording checks the upcaster.
        var evolution = SchemaEvolution()
        evolution.add(version: 2, .renamed(from: "bio", to: "biography"))
        let replayed = try await LogScenario(recorded: export, vault: vault) { options in
            options.evolution = evolution
            options.additionalKeys = [AccountDetails.__Key_biography.self]
        }
        #expect(try await replayed.store.log.verify(progress: nil).headHash == head)
        #expect(try replayed.store.details(of: "a1")?.biography == "Analyst")
        #expect(try replayed.store.details(of: "a2")?.biography == "Logician")
        let deletion = await replayed.when { try await $0.delete("a2") }
        #expect(deletion.types == ["account.deleted"] && deletion.error == nil)
        await replayed.remove()

        // Without the vault, a sealed recording is refused rather than read as redacted.
        await #expect(throws: LogTransferError.self) { _ = try await LogScenario(recorded: export) }
    }

    @Test("the clock and the ids are deterministic: two runs give the same ids and times")
    func determinism() async throws {
        func run() async throws -> [String] {
            let scenario = try await LogScenario()
            let ada = try await scenario.store.signup(email: "ada@example.org", password: "Analytical1", name: PersonNameComponents(givenName: "Ada"))
            try await scenario.store.changeDateOfBirth(of: ada.accountId, to: Date(timeIntervalSince1970: -4_000_000_000))
            let records = try await scenario.store.log.read()
            await scenario.remove()
            return records.map { "\($0.streamID) \($0.type) \($0.timestamp.timeIntervalSince1970)" }
        }
        let first = try await run()
        #expect(first == (try await run()))
        #expect(first.first?.hasPrefix("account-0001 account.created ") == true)
    }

    @Test("a log built from events replays into any projection")
    func replayIntoAnyProjection() async throws {
        let scenario = try await LogScenario()
        try await scenario.given(
            (1...5).map { StreamEvent("a\($0)", .accountCreated(userId: "u\($0)@example.org", passwordHash: nil, isAnonymous: false, values: [:])) })
        try await scenario.given([StreamEvent("a2", .loginFailed(reason: "wrongPassword")), StreamEvent("a3", .accountDeleted)])
        let counts = try await scenario.replay(into: TypeCounter()) { state in
            try ["account.created", "auth.login-failed", "account.deleted"].map { type in
                try state.get("counts", key: Array(type.utf8)).map { String(decoding: $0, as: UTF8.self) } ?? "0"
            }
        }
        #expect(counts == ["5", "1", "1"])
        await scenario.remove()
    }

    @Test("the seed's UI-test flows, headless, on the event-sourced service")
    func headlessFlows() async throws {
        let scenario = try await LogScenario(values: storeSeedConfiguration)
        let service = EventSourcedAccountService(store: scenario.store)
        let configuration = AccountConfiguration(service: service, configuration: storeSeedConfiguration)
        try await SpeziRuntime(configuration: Configuration { configuration }).boot()
        let birthday = Date(timeIntervalSince1970: -1_000_000_000)
        try await service.signup(
            email: "leland@stanford.edu", password: "StanfordRocks123!", name: PersonNameComponents(givenName: "Leland", familyName: "Stanford"),
            genderIdentity: .male, dateOfBirth: birthday)
        try await service.updateGenderIdentity(to: .preferNotToState)
        try await service.changeDateOfBirth(to: birthday.addingTimeInterval(86_400))
        try await service.logout()
        try await service.login(email: "leland@stanford.edu", password: "StanfordRocks123!")
        let details = try #require(configuration.account.details)
        #expect(details.genderIdentity == .preferNotToState)
        #expect(details.dateOfBirth == birthday.addingTimeInterval(86_400))
        await #expect(
            try scenario.store.log.read().map(\.type) == [
                "account.created", "account.details-modified", "account.details-modified", "auth.logged-out", "auth.login-succeeded"
            ])
        await scenario.remove()
    }
}
