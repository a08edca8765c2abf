//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import Logging
import SpeziAccount
import SpeziAccountStore
import Synchronization

/// `GET /v1/account/events`: the signed-in account's notifications as Server-Sent Events, read from
/// the log (so changes made by other servers or by `accountctl` arrive too).
///
/// Each event's `id` is its log position; a client that reconnects with `Last-Event-ID` gets what
/// followed it and nothing twice. Without one the stream starts at the log's head. Every
/// `heartbeat` a comment line keeps proxies from closing an idle stream and the session is checked
/// again (for expiry). The stream ends once the session is over: after the notifications of the
/// command that ended it (the logout, the password change, the deletion: its `auth.session-ended`
/// and every later record of the account that was already in the log then), or at the first
/// heartbeat after it expired.
///
/// `start` is at or before the log's head as it was before the token was checked, so the record
/// that ends the session is always after it and the stream reads it: a heartbeat that finds the
/// session ended by a record the stream has not read yet (another server's logout, noticed here
/// only at the next poll of the log) leaves the ending to the stream.
struct NotificationStream: Sendable {
    let store: AccountStore
    let token: String
    /// The hash that the session's events carry for `token`.
    let sessionHash: String
    let accountId: String
    let start: UInt64
    /// When the session expires (a session's expiry never moves).
    let expiresAt: Date
    let heartbeat: Duration
    let logger: Logger

    /// The streaming response; `slot` (the stream's place under the per-session and per-account
    /// caps) is held until the stream ends or the response is dropped unsent.
    func response(holding slot: StreamSlots.Slot) -> Response {
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { withExtendedLifetime(slot) {} }
                try await stream(into: &writer)
                try await writer.finish(nil)
            })
    }

    /// What the account's records yield: a notification, or the end of the session.
    private enum Item: Sendable {
        case event(LoggedNotification)
        case ended
    }

    private func stream(into writer: inout any ResponseBodyWriter) async throws {
        try await writer.write(ByteBuffer(string: ": \(accountId)\n\n"))
        var feed = EventFeed<Item>(heartbeat: heartbeat, logger: logger, failure: "an account's event stream failed")
        feed.passingFailures = true
        let read = ReadVersion()
        try await feed.run { yield in
            try await notifications(after: start, read: read, yield: yield)
        } consume: { chunk in
            switch chunk {
            case let .item(.event(notification)):
                try await writer.write(ByteBuffer(string: try Self.frame(notification)))
            case .heartbeat:
                guard await sessionGoesOn(read: read) else { return false }
                try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
            case .item(.ended):
                return false
            }
            return true
        }
    }

    /// The account's stream version through which the stream has read and sent everything.
    private final class ReadVersion: Sendable {
        let version = Mutex<UInt64>(0)
    }

    /// Whether the stream goes on at a heartbeat: the session still signs in, or it has not
    /// expired yet and the stream has records of the account left to read, one of which ended it
    /// (a logout, a password change, a deletion: the stream ends after it). An expired session
    /// ends the stream here, as no record says so; so does one that is gone while the stream has
    /// read everything (a later login dropped it as expired by a clock ahead of this one), and a
    /// failure to read the account.
    private func sessionGoesOn(read: ReadVersion) async -> Bool {
        do {
            _ = try await store.authenticate(token: token)
            return true
        } catch AccountStoreError.invalidSession {
            guard store.now() < expiresAt else { return false }
            do {
                let version = try await store.log.streamVersion(accountId) ?? 0
                return read.version.withLock { $0 } < version
            } catch {
                logger.error("an account's event stream could not read the account's version", metadata: ["error": "\(error)"])
                return false
            }
        } catch {
            logger.error("an account's event stream could not check its session", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Yields the account's notifications after `start` until the session ends in the log. It
    /// reads the account's own records, so that the record ending this session is seen even though
    /// it reports nothing; the rest of its command follows before the end.
    private func notifications(after start: UInt64, read: ReadVersion, yield: EventFeed<Item>.Yield) async throws {
        var lastVersion: UInt64?
        var folds = NotificationFolds(limit: 1)
        for try await record in store.log.subscribeRecords(after: start, stream: accountId) {
            for notification in try await store.notifications(for: record, folds: &folds) { await yield(.event(notification)) }
            // After the yields: the feed's consumer took them, so a heartbeat it takes later
            // comes after they were written.
            read.version.withLock { $0 = record.streamVersion }
            if lastVersion == nil, try endsSession(record) {
                lastVersion = try await store.log.streamVersion(accountId) ?? record.streamVersion
            }
            if let lastVersion, record.streamVersion >= lastVersion {
                await yield(.ended)
                return
            }
        }
    }

    /// Whether `record` ends the session with `sessionHash`: its `auth.session-ended`, or the
    /// account's deletion.
    private func endsSession(_ record: RecordedEvent) throws -> Bool {
        switch record.type {
        case "account.deleted":
            return true
        case "auth.session-ended":
            guard case let .sessionEnded(hash, _) = try store.accounts.event(from: record) else { return false }
            return hash == sessionHash
        default:
            return false
        }
    }

    /// One event: `id` (the log position), `event` (the notification's name), `data` (JSON, one line).
    static func frame(_ notification: LoggedNotification) throws -> String {
        let name: String
        var data: [String: AccountDetailsJSON] = [:]
        switch notification.event {
        case let .associatedAccount(details):
            name = "associatedAccount"
            data["details"] = AccountDetailsJSON(details)
        case let .detailsChanged(before, after):
            name = "detailsChanged"
            data["before"] = AccountDetailsJSON(before)
            data["after"] = AccountDetailsJSON(after)
        case .deletingAccount:
            name = "deletingAccount"
        case let .disassociatingAccount(details):
            name = "disassociatingAccount"
            data["details"] = AccountDetailsJSON(details)
        }
        let json = try JSONCoding.encoder.encode(EventData(accountId: notification.accountId, values: data))
        return "id: \(notification.position)\nevent: \(name)\ndata: \(String(decoding: json, as: UTF8.self))\n\n"
    }

    private struct EventData: Encodable {
        let accountId: String
        let values: [String: AccountDetailsJSON]

        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(accountId, forKey: Key(stringValue: "accountId"))
            for (key, value) in values { try container.encode(value, forKey: Key(stringValue: key)) }
        }
    }

    /// Details without the password.
    private struct AccountDetailsJSON: Encodable {
        let details: AccountDetails

        init(_ details: AccountDetails) {
            var shown = details
            shown.password = nil
            self.details = shown
        }

        func encode(to encoder: any Encoder) throws { try details.encode(to: encoder) }
    }
}
