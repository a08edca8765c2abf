//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import SpeziAccountStore

extension CrashHarness {
    /// Writes about `records` log records before the first round, from this process: accounts
    /// signed up and then changed again and again by eight tasks, appended relaxed (the harness
    /// is never killed, and these writes are not under the power-loss shim). Nothing of it is
    /// acknowledged; the checks after each round cover these accounts as any other (the cache
    /// equals the fold of each stream, the claims point back). A long log makes a rebuild's
    /// chunks large enough to be read in two parts.
    func preload(records: Int) async throws {
        watchdog.begin("the preload: writing records")
        let store = try await openStore(directory, sync: .relaxed)
        let target = UInt64(records)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        var accounts: [String] = []
                        var step = 0
                        while true {
                            // The log's length is asked every 16 steps: a few records more than asked for is fine.
                            if step % 16 == 0, try await store.log.lastPosition() >= target { break }
                            watchdog.progressed()
                            step += 1
                            if accounts.count < 4 || step % 10 == 0 {
                                var details = AccountDetails()
                                details.userId = "preload-\(task)-\(step)@example.org"
                                details.password = "preload-\(step)"
                                details.name = PersonNameComponents(givenName: "Preload \(task)", familyName: "Step \(step)")
                                accounts.append(try await store.signup(details).accountId)
                            } else {
                                var change = AccountDetails()
                                change.name = PersonNameComponents(givenName: "Preload \(task)", familyName: "Change \(step)")
                                try await store.modify(accounts[step % accounts.count], try AccountModifications(modifiedDetails: change))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
