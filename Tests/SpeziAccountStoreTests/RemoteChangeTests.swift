//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount
import TestSupport
import TestTiers
import Testing

@testable import SpeziAccountStore

/// Runs `accountctl` on `store` in a process of its own and waits for it.
private func accountctl(_ store: URL, _ arguments: [String]) async throws -> (status: Int32, errors: String) {
    var environment = ProcessInfo.processInfo.environment
    environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] = "1"
    let run = try await runProgram(builtExecutable("accountctl"), arguments + ["--store", store.path], environment: environment)
    return (run.status, run.errors)
}

@Suite("Changes made by another process reach the signed-in account and its notifications", .timeLimit(.minutes(3)), .integration)
struct RemoteChangeTests {
    @Test(
        "accountctl in another process renames, then deletes, the signed-in account: detailsChanged, then deletingAccount and disassociatingAccount, in log order"
    )
    func otherProcess() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open(values: storeSeedConfiguration)
        let harness = try await ServiceHarness(store: store)
        let events = harness.notifications.events
        try await harness.service.signup(leland(userId: "remote@example.org"))
        let id = try #require(harness.account.details?.accountId)
        let seen = Task { try await collect(4, of: events).map(summary) }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            seen.cancel()
        }
        defer { watchdog.cancel() }

        let rename = try await accountctl(fixture.directory, ["modify", "remote@example.org", "--name", "Jane Stanford"])
        #expect(rename.status == 0, "accountctl: \(rename.errors)")
        let deadline = ContinuousClock.now + .seconds(20)
        while harness.account.details?.name?.givenName != "Jane" && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(harness.account.details?.name?.givenName == "Jane")

        let deletion = try await accountctl(fixture.directory, ["delete", "remote@example.org"])
        #expect(deletion.status == 0, "\(deletion.errors)")
        #expect(
            try await seen.value == [
                "associatedAccount(remote@example.org, Leland)", "detailsChanged(Leland -> Jane)", "deletingAccount(\(id))",
                "disassociatingAccount(remote@example.org)"
            ])
        #expect(harness.account.details == nil)
        await store.close()
    }
}
