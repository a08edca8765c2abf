//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Defences a test turns off, one at a time, to prove that the test of each fails without it
/// (a mutant the test must catch, in every run), and the points where a test holds a command to
/// force an interleaving. Package access only: an application cannot reach them.
package struct DefenceSwitches: Sendable {
    /// An unknown user id's login checks the password against a decoy hash, as much work as a
    /// known one's (``AccountStore/login(userId:password:secondFactor:context:)``).
    package var timingDecoy = true
    /// A refused password reset completion answers no sooner than ``resetAnswerFloor``.
    package var resetAnswerFloor = true
    /// A login appends its success at the stream version whose password hash it checked, so a
    /// password changed meanwhile voids it.
    package var loginVersionCheck = true
    /// The shortest time before a refused reset completion is answered.
    package var resetFloor: Duration = AccountStore.invalidResetAnswerTime
    /// Runs after a login's password check succeeded and before its success is appended: a test
    /// changes the account there to force the race the version check guards against.
    package var afterPasswordCheck: (@Sendable (_ accountId: String) async -> Void)?
    /// Runs after a change of an account decided its events and before it appends them: a test
    /// appends there to make another writer come first, every time.
    package var beforeChangeAppend: (@Sendable (_ accountId: String) async -> Void)?

    package init() {}
}
