//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import SpeziAccountStore

/// `GET /admin/api/tail`: every new record of the log as a Server-Sent Event, whoever appended it
/// (this server, another node or `accountctl`), with no personal values: position, time, type and
/// stream only.
///
/// Each event's `id` is the record's position; a client reconnecting with `Last-Event-ID` gets
/// what followed it. Without one the stream starts with the last `backlog` records. A comment line
/// every `heartbeat` keeps proxies from closing an idle stream; the stream ends after `lifetime`
/// (the admin session's validity), so that a browser whose session has expired is asked again.
struct AdminTail: Sendable {
    let store: AccountStore
    let after: UInt64?
    let backlog: UInt64
    let heartbeat: Duration
    let lifetime: Duration
    let logger: Logger

    /// One record as the tail shows it.
    struct Entry: Encodable {
        let position: UInt64
        let time: String
        let type: String
        let stream: String

        init(_ record: RecordedEvent) {
            position = record.position
            time = JSONCoding.timestamp(record.timestamp)
            type = record.type
            stream = record.streamID
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

    private enum Chunk: Sendable {
        case record(RecordedEvent)
        case heartbeat
    }

    private func stream(into writer: inout any ResponseBodyWriter) async throws {
        let start: UInt64
        if let after {
            start = after
        } else {
            let last = try await store.log.lastPosition()
            start = last > backlog ? last - backlog : 0
        }
        let (chunks, continuation) = AsyncThrowingStream<Chunk, any Error>.makeStream(bufferingPolicy: .bufferingOldest(1_024))
        let producers = Task {
            await withGracefulShutdownHandler {
                await produce(after: start, into: continuation)
            } onGracefulShutdown: {
                continuation.finish()
            }
        }
        defer { producers.cancel() }
        try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
        for try await chunk in chunks {
            switch chunk {
            case let .record(record):
                let json = try JSONCoding.encoder.encode(Entry(record))
                try await writer.write(
                    ByteBuffer(string: "id: \(record.position)\nevent: record\ndata: \(String(decoding: json, as: UTF8.self))\n\n"))
            case .heartbeat:
                try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
            }
        }
    }

    /// Feeds the log's records and the heartbeats into `continuation` until the lifetime is over,
    /// the log closes or fails, or the task is cancelled.
    private func produce(after start: UInt64, into continuation: AsyncThrowingStream<Chunk, any Error>.Continuation) async {
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await record in store.log.subscribeRecords(after: start) { continuation.yield(.record(record)) }
            }
            group.addTask {
                let end = ContinuousClock.now + lifetime
                while ContinuousClock.now < end {
                    try await Task.sleep(for: min(heartbeat, end - ContinuousClock.now))
                    continuation.yield(.heartbeat)
                }
            }
            do {
                try await group.next()
            } catch is CancellationError {
            } catch {
                logger.error("the admin tail failed", metadata: ["error": "\(error)"])
            }
            group.cancelAll()
            continuation.finish()
        }
    }
}
