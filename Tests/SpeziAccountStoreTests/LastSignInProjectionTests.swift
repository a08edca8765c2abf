//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Projections
import SpeziAccount
import SpeziAccountStore
import SpeziAccountTesting
import Testing

/// When each live account last signed in (its signup, a login or a session's start), by the log's
/// clock: what a study needs to find the accounts nobody has used for a while. A deletion removes
/// the account. Each stream's entry depends on that stream alone, so it is rebuilt stream by
/// stream; `apply` only collects, and `finishBatch` writes.
struct LastSignInProjection: Projection {
    static let name = "last-sign-in"
    var name: String { Self.name }
    var fingerprint: String { "last-sign-in v1" }
    var databaseNames: [String] { ["last-sign-in"] }
    var buildsStreamByStream: Bool { true }

    /// Each account the batch met: when it last signed in (µs since 1970), or nil once deleted.
    typealias BatchState = [String: Int64?]

    func makeBatchState() -> BatchState { [:] }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout BatchState) throws {
        switch record.withTypeBytes({ AccountEvent.Kind(nameBytes: $0) }) {
        case .accountCreated, .loginSucceeded, .sessionStarted:
            batch[record.streamID] = Int64((record.timestamp.timeIntervalSince1970 * 1_000_000).rounded())
        case .accountDeleted:
            batch[record.streamID] = .some(nil)
        default:
            return
        }
    }

    func finishBatch(_ batch: inout BatchState, state: ProjectionState) throws {
        for (accountId, micros) in batch {
            if let micros {
                try state.put("last-sign-in", key: Array(accountId.utf8), value: Array(String(micros).utf8))
            } else {
                try state.delete("last-sign-in", key: Array(accountId.utf8))
            }
        }
        batch.removeAll()
    }

    /// The live accounts whose last sign-in was before `date`, in account-id order.
    static func inactive(since date: Date, in state: ProjectionState) throws -> [String] {
        let limit = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        var accounts: [String] = []
        try state.forEach("last-sign-in") { key, value in
            if let micros = Int64(String(decoding: value, as: UTF8.self)), micros < limit {
                accounts.append(String(decoding: key, as: UTF8.self))
            }
            return true
        }
        return accounts
    }
}

@Suite("A projection from a test target: the accounts nobody signed in to for a while")
struct LastSignInProjectionTests {
    @Test("signups, logins and sessions count as signing in, deletions remove the account; rebuilt and reopened alike")
    func inactiveAccounts() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let clock = TestClock(start: Date(timeIntervalSince1970: 1_767_225_600))
        let withProjection: (inout AccountStoreOptions) -> Void = { options in
            options.clock = { clock.now() }
            options.additionalProjections = [LastSignInProjection()]
        }
        var store = try await fixture.open(withProjection)
        let idle = try await store.signup(leland(userId: "idle@stanford.edu")).accountId
        _ = try await store.signup(leland(userId: "back@stanford.edu"))
        _ = try await store.signup(leland(userId: "session@stanford.edu"))
        let gone = try await store.signup(leland(userId: "gone@stanford.edu")).accountId
        clock.advance(by: 30 * 86_400)
        let cutoff = clock.now()
        _ = try await store.login(userId: "back@stanford.edu", password: "StanfordRocks123!")
        _ = try await store.startSession(userId: "session@stanford.edu", password: "StanfordRocks123!", validity: .seconds(600))
        try await store.delete(gone)

        let expected = [idle]
        #expect(try await store.readProjection(LastSignInProjection.name) { try LastSignInProjection.inactive(since: cutoff, in: $0) } == expected)

        try await store.rebuildProjection(LastSignInProjection.name)
        #expect(try await store.readProjection(LastSignInProjection.name) { try LastSignInProjection.inactive(since: cutoff, in: $0) } == expected)
        await store.close()

        store = try await fixture.open(withProjection)
        #expect(try await store.readProjection(LastSignInProjection.name) { try LastSignInProjection.inactive(since: cutoff, in: $0) } == expected)
        // Signing in takes the account off the list.
        _ = try await store.login(userId: "idle@stanford.edu", password: "StanfordRocks123!")
        #expect(try await store.readProjection(LastSignInProjection.name) { try LastSignInProjection.inactive(since: cutoff, in: $0) }.isEmpty)
        await store.close()
    }
}
