//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import SpeziAccountStore

/// The JSON coders of the API: sorted keys out; account details typed by the store's key registry.
enum JSONCoding {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func decoder(registry: AccountKeyRegistry) -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.userInfo[.accountDetailsKeys] = registry
        return decoder
    }

    /// RFC 3339 in whole seconds, in UTC (`2026-11-29T12:00:00Z`): what OpenAPI clients parse with
    /// their default date decoding (swift-openapi-generator's refuses fractional seconds). The
    /// log keeps microseconds; the API's order is the log position, not the time.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }
}

/// `POST /v1/sessions`.
struct LoginBody: Decodable {
    let userId: String
    let password: String
    /// A current TOTP code or a recovery code, for an account with a second factor.
    let totp: String?
}

/// `PATCH /v1/account`: values to set, identifiers to remove, and the current password when the
/// user id or the password changes.
struct ModifyBody: Decodable {
    let set: AccountDetails?
    let remove: [String]?
    let currentPassword: String?
    /// With the current password, for an account with a second factor.
    let totp: String?
}

/// `DELETE /v1/account`.
struct DeleteBody: Decodable {
    let currentPassword: String?
    /// With the current password, for an account with a second factor.
    let totp: String?
}

/// `POST /v1/password-resets`.
struct ResetRequestBody: Decodable {
    let userId: String
}

/// `POST /v1/password-resets/complete`.
struct ResetCompletionBody: Decodable {
    let userId: String
    let token: String
    let newPassword: String
}

/// The body of a signup confirmation.
struct SignupConfirmationBody: Decodable {
    let token: String
}

/// The answer to a signup or upgrade that waits for its confirmation (the same whether or not the
/// user id has an account).
struct ConfirmationSentBody: Encodable {
    let status = "confirmation-sent"
}

/// An account as the API shows it: its details (never the password) and its flags.
struct AccountBody: Encodable {
    let accountId: String
    let isAnonymous: Bool
    let isNewUser: Bool
    let details: AccountDetails

    init(_ details: AccountDetails) {
        self.accountId = details.accountId
        self.isAnonymous = details.isAnonymous
        self.isNewUser = details.isNewUser
        var shown = details
        shown.password = nil
        self.details = shown
    }
}

/// A new session: the bearer token (shown once) and the account.
struct SessionBody: Encodable {
    let token: String
    let expiresAt: String
    let account: AccountBody

    init(_ session: AccountSession, details: AccountDetails) {
        self.token = session.token
        self.expiresAt = JSONCoding.timestamp(session.expiresAt)
        self.account = AccountBody(details)
    }
}

/// `PATCH /v1/account`'s answer: the account, and a new session when the password changed (which
/// ends every other one).
struct ModifiedBody: Encodable {
    let account: AccountBody
    let session: SessionBody?
}

/// One entry of `GET /v1/account/history`.
struct HistoryEntryBody: Encodable {
    struct Change: Encodable {
        let key: String
        let old: String?
        let new: String?
    }

    let position: UInt64
    let version: UInt64
    let time: String
    let type: String
    let actor: String?
    let redacted: Bool
    let changes: [Change]

    init(_ entry: AccountHistoryEntry) {
        self.position = entry.position
        self.version = entry.streamVersion
        self.time = JSONCoding.timestamp(entry.timestamp)
        self.type = entry.type
        self.actor = entry.actor
        self.redacted = entry.isRedacted
        self.changes = entry.changes.map { Change(key: $0.key, old: $0.old, new: $0.new) }
    }
}

/// `GET /v1/account/history`: one page, and the cursor of the next (nil at the stream's end).
struct HistoryBody: Encodable {
    let accountId: String
    let entries: [HistoryEntryBody]
    let next: String?

    init(accountId: String, page: AccountHistoryPage) {
        self.accountId = accountId
        self.entries = page.entries.map(HistoryEntryBody.init)
        self.next = page.next.map(String.init)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accountId, forKey: .accountId)
        try container.encode(entries, forKey: .entries)
        // Always present: null at the end.
        try container.encode(next, forKey: .next)
    }

    private enum CodingKeys: String, CodingKey {
        case accountId, entries, next
    }
}

/// `GET /v1/account/sessions` and the console's `GET /admin/api/accounts/{id}/sessions`: the open
/// sessions, newest first, and how many are open (more than listed when the list was cut).
struct SessionListBody: Encodable {
    struct Item: Encodable {
        /// Not the token: the SHA-256 of its secret, as the history's session events carry it.
        let id: String
        let openedAt: String
        let expiresAt: String
        /// Where it was opened from; absent when the server that opened it did not say.
        let clientAddress: String?
        let userAgent: String?
        /// Whether it is the session of the request's own token (always false in the console).
        let current: Bool
    }

    let sessions: [Item]
    let total: Int

    init(_ list: OpenSessionList, current: String?) {
        sessions = list.sessions.map { session in
            Item(
                id: session.id, openedAt: JSONCoding.timestamp(session.openedAt), expiresAt: JSONCoding.timestamp(session.expiresAt),
                clientAddress: session.client?.address, userAgent: session.client?.userAgent, current: session.id == current)
        }
        total = list.total
    }
}
