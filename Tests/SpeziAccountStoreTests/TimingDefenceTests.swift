//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Synchronization
import Testing

@testable import SpeziAccountStore

/// The defences that hide whether a user id has an account, and the one that keeps a login from
/// outliving a password change, tested by the work done and by a forced interleaving, never by a
/// ratio of clocks. Each test also runs with its defence switched off and must then see the
/// difference: a test that cannot fail proves nothing.
@Suite("timing defences and forced races")
struct TimingDefenceTests {
    static let owner = "owner@example.org"

    static func details() -> AccountDetails {
        var details = AccountDetails()
        details.userId = owner
        details.password = "correct horse"
        details.name = PersonNameComponents(givenName: "Ada")
        return details
    }

    /// Password checks made by five wrong logins for a known user id and five for an unknown one,
    /// each from a client of its own (so no lock is reached).
    static func checks(decoy: Bool) async throws -> (known: Int, unknown: Int) {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.defences.timingDecoy = decoy }
        _ = try await store.signup(details())
        var counts: [Int] = []
        for userId in [owner, "nobody@example.org"] {
            let before = store.passwordChecks
            for index in 0..<5 {
                await #expect(throws: AccountServiceError.wrongCredentials) {
                    _ = try await store.login(userId: userId, password: "wrong \(index)", context: .init(client: "client-\(userId)-\(index)"))
                }
            }
            counts.append(store.passwordChecks - before)
        }
        await store.close()
        return (counts[0], counts[1])
    }

    @Test("a wrong login makes one password check whether or not the user id has an account; without the decoy the counts differ")
    func sameWorkForUnknownUserIds() async throws {
        let defended = try await Self.checks(decoy: true)
        #expect(defended.known == 5 && defended.unknown == 5, "\(defended)")
        let undefended = try await Self.checks(decoy: false)
        #expect(undefended.known != undefended.unknown, "the test cannot see a missing decoy: \(undefended)")
    }

    /// How long each of two refused reset completions took, for a known and an unknown user id.
    static func refusals(floor: Bool, length: Duration) async throws -> [Duration] {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { options in
            options.defences.resetAnswerFloor = floor
            options.defences.resetFloor = length
        }
        _ = try await store.signup(details())
        var times: [Duration] = []
        for userId in [owner, "nobody@example.org"] {
            for index in 0..<2 {
                let start = ContinuousClock.now
                await #expect(throws: AccountStoreError.invalidPasswordResetToken) {
                    try await store.completePasswordReset(userId: userId, token: "not a token \(index)", newPassword: "new password 1234")
                }
                times.append(ContinuousClock.now - start)
            }
        }
        await store.close()
        return times
    }

    @Test("a refused reset completion is never answered before its floor; without the floor it is")
    func resetFloorHolds() async throws {
        let floor = Duration.seconds(1)
        let defended = try await Self.refusals(floor: true, length: floor)
        #expect(defended.allSatisfy { $0 >= floor }, "\(defended)")
        let undefended = try await Self.refusals(floor: false, length: floor)
        #expect(undefended.contains { $0 < floor }, "the test cannot see a missing floor: \(undefended)")
    }

    /// A login held between its password check and its append while the password changes.
    static func loginRacingPasswordChange(versionCheck: Bool) async throws -> (loggedIn: Bool, sessionsAfter: Int) {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let shared = Shared()
        let opened = try await fixture.open { options in
            options.defences.loginVersionCheck = versionCheck
            options.defences.afterPasswordCheck = { accountId in
                // The first login to pass its check waits here while the owner changes the password.
                guard
                    shared.held.withLock({ done in
                        defer { done = true }
                        return !done
                    }), let store = shared.store.withLock({ $0 })
                else {
                    return
                }
                var change = AccountDetails()
                change.password = "a brand new password"
                do {
                    try await store.modify(accountId, try AccountModifications(modifiedDetails: change))
                } catch {
                    Issue.record("the password change failed: \(error)")
                }
            }
        }
        shared.store.withLock { $0 = opened }
        let accountId = try await opened.signup(details()).accountId
        var loggedIn = false
        do {
            _ = try await opened.startSession(userId: owner, password: "correct horse", validity: .seconds(3_600))
            loggedIn = true
        } catch AccountServiceError.wrongCredentials {
            loggedIn = false
        }
        let sessions = try await opened.currentState(of: accountId)?.sessions.count ?? 0
        await opened.close()
        return (loggedIn, sessions)
    }

    /// The store the hook changes, and whether it has held a login yet.
    final class Shared: Sendable {
        let store = Mutex<AccountStore?>(nil)
        let held = Mutex(false)
    }

    @Test("a login held between its password check and its append while the password changes opens no session; without the check it does")
    func loginRaceForced() async throws {
        let defended = try await Self.loginRacingPasswordChange(versionCheck: true)
        #expect(!defended.loggedIn && defended.sessionsAfter == 0, "\(defended)")
        let undefended = try await Self.loginRacingPasswordChange(versionCheck: false)
        #expect(undefended.loggedIn && undefended.sessionsAfter == 1, "the test cannot see a missing version check: \(undefended)")
    }
}
