//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import Foundation
import SpeziAccount
import SpeziAccountStore
import Synchronization
import TestSupport
import TestTiers
import Testing

/// What several app servers on one PostgreSQL log share: the account-wide counters live in the
/// account's own stream, so N nodes do not give an attacker N times the allowance.
@Suite("account-wide budgets across nodes on one PostgreSQL log", .timeLimit(.minutes(3)), .integration)
struct SharedBudgetTests {
    init() { PostgresLogSupport.register() }

    static func nodes(_ server: PostgresServer, _ change: (inout AccountStoreOptions) -> Void) async throws -> ([AccountStore], [URL]) {
        let folders = (0..<2).map { FileManager.default.temporaryDirectory.appendingPathComponent("budget-node-\($0)-\(UUID().uuidString)") }
        var options = nodeOptions(server.url())
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        options.clock = { now }
        change(&options)
        var stores: [AccountStore] = []
        for folder in folders { stores.append(try await AccountStore(directory: folder.path, options: options)) }
        return (stores, folders)
    }

    static func signup(_ store: AccountStore) async throws -> String {
        var details = AccountDetails()
        details.userId = "owner@example.org"
        details.password = "correct horse"
        details.name = PersonNameComponents(givenName: "Ada")
        return try await store.signup(details).accountId
    }

    @Test("failures on one node put the user id's checks on the other in the account-wide queue")
    func accountWideFailuresShared() async throws {
        let server = try await PostgresServer.start(name: "budgets")
        defer { server.remove() }
        let (stores, folders) = try await Self.nodes(server) { options in
            options.loginThrottling = LoginThrottling(
                attemptsPerClient: 5, lockDuration: .seconds(300), accountWideAttempts: 3, slowdownInterval: .seconds(2),
                maximumWait: .seconds(1))
        }
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        let (first, second) = (stores[0], stores[1])
        _ = try await Self.signup(first)
        for index in 0..<3 {
            await #expect(throws: AccountServiceError.wrongCredentials) {
                _ = try await first.login(userId: "owner@example.org", password: "guess \(index)", context: .init(client: "a\(index)"))
            }
        }
        await first.settleBackgroundWrites()
        // The second node has seen no failure of its own: its first check takes the free turn,
        // the next one would wait 2 s, more than the longest wait: refused without a hash.
        await #expect(throws: AccountServiceError.wrongCredentials) {
            _ = try await second.login(userId: "owner@example.org", password: "guess b0", context: .init(client: "b0"))
        }
        let refused = await #expect(throws: AccountStoreError.self) {
            _ = try await second.login(userId: "owner@example.org", password: "guess b1", context: .init(client: "b1"))
        }
        if case .lockedOut = refused {} else { Issue.record("expected lockedOut, got \(String(describing: refused))") }
        for store in stores { await store.close() }
    }

    @Test("an account's changes per hour count on every node: 6 on one and 5 on the other pass a limit of 10 once")
    func changeBudgetShared() async throws {
        let server = try await PostgresServer.start(name: "changes")
        defer { server.remove() }
        let (stores, folders) = try await Self.nodes(server) { options in options.limits.changesPerAccountPerHour = 10 }
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        let accountId = try await Self.signup(stores[0])
        var outcomes: [Bool] = []
        for index in 0..<11 {
            var change = AccountDetails()
            change.name = PersonNameComponents(givenName: "Name \(index)")
            do {
                try await stores[index < 6 ? 0 : 1].modify(accountId, try AccountModifications(modifiedDetails: change))
                outcomes.append(true)
            } catch AccountStoreError.changeLimitReached {
                outcomes.append(false)
            }
        }
        #expect(outcomes == Array(repeating: true, count: 10) + [false])
        for store in stores { await store.close() }
    }
}
