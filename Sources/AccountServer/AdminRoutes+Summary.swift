//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import SpeziAccountStore

extension AdminRoutes {
    /// `GET /admin/api/accounts/{id}`: the account's state folded from the log, without its
    /// personal values (so viewing it is not recorded, unlike its history): deleted or not,
    /// anonymous, failed logins, open sessions and reset requests. 404 for an id no account has.
    func summary(_ context: AdminRequestContext) async throws -> Response {
        let accountId = try accountParameter(context)
        guard let state = try await store.accounts.load(accountId) else { throw Problem.noSuchAccount }
        let applied = try store.cachedState(of: accountId)?.version == state.version
        var summary = AccountSummaryBody(state, now: store.now(), applied: applied)
        summary.disabled = try await store.isDisabled(accountId)
        return try AccountRoutes.json(summary)
    }
}
