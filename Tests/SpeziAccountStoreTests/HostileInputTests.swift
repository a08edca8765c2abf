//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Hostile input: oversized values are refused with a clear error and leave the store unchanged")
struct HostileInputTests {
    @Test("a 100 MB name, 10,000 keys, a 600-byte user id, a 1 MB password")
    func oversized() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let id = try await store.signup(leland()).accountId
        let before = try store.details(of: id)
        let logFile = fixture.directory.appendingPathComponent("log/data.mdb")
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: logFile.path)[.size] as? Int

        var huge = leland(userId: "huge@stanford.edu")
        huge.name = PersonNameComponents(givenName: String(repeating: "x", count: 100 * 1024 * 1024))
        await #expect(throws: AccountStoreError.valueTooLarge(key: "name", bytes: 100 * 1024 * 1024 + 16, limit: 64 * 1024)) {
            try await store.signup(huge)
        }
        var hugeChange = AccountDetails()
        hugeChange.name = huge.name
        await #expect(throws: AccountStoreError.self) { try await store.modify(id, try AccountModifications(modifiedDetails: hugeChange)) }

        var manyKeys: [String: Data] = [:]
        for index in 0..<10_000 { manyKeys["key\(index)"] = Data("\(index)".utf8) }
        var crowded = try AccountDetails(perKey: manyKeys)
        crowded.add(contentsOf: leland(userId: "crowded@stanford.edu"))
        await #expect(throws: AccountStoreError.tooManyKeys(count: 10_005, limit: 256)) { try await store.signup(crowded) }

        let longUserId = String(repeating: "a", count: 590) + "@stanford.edu"
        await #expect(throws: AccountStoreError.valueTooLarge(key: "userId", bytes: 603, limit: 320)) {
            try await store.signup(leland(userId: longUserId))
        }
        let longPassword = String(repeating: "p", count: 1024 * 1024)
        await #expect(throws: AccountStoreError.valueTooLarge(key: "password", bytes: 1024 * 1024, limit: 4_096)) {
            try await store.signup(leland(userId: "long@stanford.edu", password: longPassword))
        }
        await #expect(throws: AccountServiceError.wrongCredentials) {
            try await store.login(userId: "lelandstanford@stanford.edu", password: longPassword)
        }

        // Nothing was appended (the refused login is refused before it reaches the account), nothing changed.
        await #expect(try store.log.lastPosition() == 1)
        #expect(try store.details(of: id) == before)
        #expect(try FileManager.default.attributesOfItem(atPath: logFile.path)[.size] as? Int == sizeBefore)
        await store.close()
    }
}
