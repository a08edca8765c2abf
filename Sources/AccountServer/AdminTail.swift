//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import Logging
import SpeziAccountStore

/// `GET /admin/api/tail`: every new record of the log as a Server-Sent Event, whoever appended it
/// (this server, another node or `accountctl`), with no personal values: position, time, type and
/// stream only.
///
/// Each event's `id` is the record's position; a client reconnecting with `Last-Event-ID` gets
/// what followed it. Without one the stream starts with the last `backlog` records. A comment line
/// every `heartbeat` keeps proxies from closing an idle stream; the stream ends after `lifetime`
/// (the admin session's validity), so that a browser whose session has expired is asked again,
/// and at the first record or heartbeat after its session is signed out.
struct AdminTail: Sendable {
    let store: AccountStore
    let after: UInt64?
    let backlog: UInt64
    let heartbeat: Duration
    let lifetime: Duration
    /// False once the session the tail was opened with is signed out or expired: the tail ends
    /// at the next record or heartbeat.
    let stillSignedIn: @Sendable () -> Bool
    let logger: Logger

    /// One record as the tail shows it.
    struct Entry: Encodable {
        let position: UInt64
        let time: String
        let type: String
        let stream: String
        /// The record's version in its stream.
        let version: UInt64
        /// The event's id (a follower's deduplication key).
        let id: String

        init(_ record: RecordedEvent) {
            position = record.position
            time = JSONCoding.timestamp(record.timestamp)
            type = record.type
            stream = record.streamID
            version = record.streamVersion
            id = record.eventID.uuidString.lowercased()
        }
    }

    func response() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/event-stream"],
            body: ResponseBody { writer in
                try await stream(into: &writer)
                try await writer.finish(nil)
            })
    }

    private func stream(into writer: inout any ResponseBodyWriter) async throws {
        let start: UInt64
        if let after {
            start = after
        } else {
            let last = try await store.log.lastPosition()
            start = last > backlog ? last - backlog : 0
        }
        try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
        let feed = EventFeed<RecordedEvent>(heartbeat: heartbeat, lifetime: lifetime, logger: logger, failure: "the admin tail failed")
        try await feed.run { [store] yield in
            for try await record in store.log.subscribeRecords(after: start) { await yield(record) }
        } consume: { chunk in
            guard stillSignedIn() else {
                logger.notice("admin tail ended: its session was signed out or expired")
                return false
            }
            switch chunk {
            case let .item(record):
                let json = try JSONCoding.encoder.encode(Entry(record))
                try await writer.write(
                    ByteBuffer(string: "id: \(record.position)\nevent: record\ndata: \(String(decoding: json, as: UTF8.self))\n\n"))
            case .heartbeat:
                try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
            }
            return true
        }
    }
}
