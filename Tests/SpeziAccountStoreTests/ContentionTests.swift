//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import SpeziAccount
import Synchronization
import TestSupport
import Testing

@testable import SpeziAccountStore

/// A value that concurrent tasks change under a lock.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
}

@Suite("Concurrency: many tasks on the same accounts")
struct ContentionTests {
    struct Acknowledged: Sendable {
        let kind: String
        let accountId: String
        let token: String
    }

    @Test(
        "48 tasks sign up, modify and delete the accounts of 4 user ids at once: nothing acknowledged lost, never two live accounts for one user id, cache = fold = rebuild"
    )
    func signupModifyDelete() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open()
        let userIds = (0..<4).map { "shared\($0)@stanford.edu" }
        let signedUpUserIds = Shared<[String: String]>([:])
        let acknowledged = Shared<[Acknowledged]>([])
        let refusals = Shared<[String: Int]>([:])

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<48 {
                group.addTask {
                    var generator = SplitMix64(seed: UInt64(task) &* 7_919 &+ 1)
                    for step in 0..<12 {
                        let userId = userIds[Int(generator.next() % 4)]
                        let token = "task\(task)-step\(step)"
                        do {
                            switch generator.next() % 3 {
                            case 0:
                                let created = try await store.signup(leland(userId: userId))
                                acknowledged.withLock { $0.append(Acknowledged(kind: "signup", accountId: created.accountId, token: token)) }
                                signedUpUserIds.withLock { $0[created.accountId] = userId }
                            case 1:
                                guard let id = try await store.resolve(userId) else { continue }
                                var change = AccountDetails()
                                change.name = PersonNameComponents(givenName: token)
                                try await store.modify(id, try AccountModifications(modifiedDetails: change))
                                acknowledged.withLock { $0.append(Acknowledged(kind: "modify", accountId: id, token: token)) }
                            default:
                                guard let id = try await store.resolve(userId) else { continue }
                                try await store.delete(id)
                                acknowledged.withLock { $0.append(Acknowledged(kind: "delete", accountId: id, token: token)) }
                            }
                        } catch {
                            // Refusals must be the typed ones: taken user id, account gone, too much contention.
                            let kind: String =
                                switch error {
                                case AccountServiceError.credentialsTaken: "user id taken"
                                case AccountStoreError.accountNotFound: "account gone"
                                case AccountStoreError.tooMuchContention: "contention"
                                default: "unexpected: \(error)"
                                }
                            refusals.withLock { $0[kind, default: 0] += 1 }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }

        let acks = acknowledged.withLock { $0 }
        let refused = refusals.withLock { $0 }
        let signedUp = signedUpUserIds.withLock { $0 }
        #expect(!refused.keys.contains { $0.hasPrefix("unexpected") }, "\(refused)")
        #expect(acks.contains { $0.kind == "signup" } && acks.contains { $0.kind == "modify" } && acks.contains { $0.kind == "delete" })

        // Every account the log knows, with its events in order.
        let head = try await store.log.lastPosition()
        var streams: [String: [(position: UInt64, type: String, event: AccountEvent)]] = [:]
        var position: UInt64 = 1
        while position <= head {
            let batch = try await store.log.read(from: position, limit: 1_000)
            for record in batch {
                streams[record.streamID, default: []].append((record.position, record.type, try store.accounts.event(from: record)))
            }
            position = (batch.last?.position ?? head) + 1
        }

        // Nothing acknowledged is lost and nothing refused was written: the log holds exactly one
        // account per acknowledged signup, one modification per acknowledged one, one deletion per
        // acknowledged one. (A deleted account's payloads are shredded, so they are counted by
        // record type; a live account's modifications are also found by their content.)
        #expect(Set(streams.keys) == Set(acks.filter { $0.kind == "signup" }.map(\.accountId)))
        for (id, records) in streams {
            let mine = acks.filter { $0.accountId == id }
            #expect(records.first?.type == "account.created")
            #expect(records.filter { $0.type == "account.details-modified" }.count == mine.filter { $0.kind == "modify" }.count, "\(id)")
            #expect(records.filter { $0.type == "account.deleted" }.count == mine.filter { $0.kind == "delete" }.count, "\(id)")
            let deletedAt = records.first { $0.type == "account.deleted" }?.position ?? .max
            #expect(records.allSatisfy { $0.type != "account.details-modified" || $0.position < deletedAt }, "a change after deletion of \(id)")
            guard deletedAt == .max else { continue }
            for ack in mine where ack.kind == "modify" {
                let matches = records.filter {
                    guard case let .detailsModified(modified, _) = $0.event, let name = modified["name"] else { return false }
                    return (try? JSONDecoder().decode(PersonNameComponents.self, from: name))?.givenName == ack.token
                }
                #expect(matches.count == 1, "modification \(ack.token) of \(id)")
            }
        }

        // One user id never belongs to two live accounts: their lifetimes in the log don't overlap.
        var lifetimes: [String: [ClosedRange<UInt64>]] = [:]
        for (id, records) in streams {
            let end = records.first { $0.type == "account.deleted" }?.position ?? .max
            // Shredded accounts no longer say their user id; the acknowledged signup's task knew it.
            let userId: String
            if case let .accountCreated(known, _, _, _) = records[0].event {
                userId = known
            } else {
                userId = try #require(signedUp[id])
            }
            lifetimes[userId, default: []].append(records[0].position...end)
        }
        for (userId, spans) in lifetimes {
            let sorted = spans.sorted { $0.lowerBound < $1.lowerBound }
            for (earlier, later) in zip(sorted, sorted.dropFirst()) {
                #expect(earlier.upperBound < later.lowerBound, "two live accounts for \(userId)")
            }
        }

        // The projections equal the fold of every stream and a rebuild from position 0.
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: head)
        let cached = try cachedStates(store)
        await #expect(cached == (try foldedStates(store, ids: streams.keys)))
        try await store.projections.rebuild(AccountDetailsProjection.projectionName)
        #expect(try cachedStates(store) == cached)
        print("contention: \(acks.count) operations acknowledged, refused \(refused), \(streams.count) accounts, \(head) events")
        await store.close()
    }
}
