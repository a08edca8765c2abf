//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Raw LMDB behind the smallest asynchronous group commit: what any log that lets its appenders
/// suspend (rather than block a thread) and commits their appends in groups on a thread of its own
/// can reach on this machine and disk, before it does any work of its own.
///
/// Each appender is a task that queues its frame with a continuation and suspends. One thread
/// waits until every writer has queued one (or a millisecond has passed since the first), commits
/// them in one durable transaction of the raw loop's records, then resumes them. There are no
/// checks, no chain hashes, no indexes: the gap between this and the raw loop is the cost of the
/// hand-off itself (queueing, waking the thread, resuming tasks), the gap between the log and this
/// is the log's own work.
///
/// With `layout`, the thread writes each record as the log lays it out instead of a frame (chain
/// hash, CRC-32C, event id, versions, metadata: ``WorkEqualImport/Loop/putRecordOnly(_:txn:)``):
/// the gap between the log and that peer is the log's work beyond its record's own.
final class RawHandoff: @unchecked Sendable {
    /// What an appender hands over: the raw loop's frame, or an event to write in the log's layout.
    enum Work: Sendable {
        case frame([UInt8])
        case record(WorkEqualImport.Item)
    }

    private let raw: RawLMDB
    private let writers: Int
    private let condition = NSCondition()
    private var queued: [(work: Work, continuation: CheckedContinuation<Void, any Error>)] = []
    private var finished = false
    private var position: UInt64 = 0
    /// The layout writer, for ``Work/record(_:)`` (used by the thread alone).
    private var layout: WorkEqualImport.Loop?
    private let stopped = DispatchSemaphore(value: 0)

    init(raw: RawLMDB, writers: Int, layout: Bool = false) throws {
        self.raw = raw
        self.writers = writers
        self.layout = layout ? try WorkEqualImport.Loop(raw) : nil
        Thread.detachNewThread { [self] in
            run()
            stopped.signal()
        }
    }

    /// Appends one frame; returns after the durable commit that holds it.
    func append(_ frame: [UInt8]) async throws {
        try await append(.frame(frame))
    }

    /// Hands over one piece of work; returns after the durable commit that holds it.
    func append(_ work: Work) async throws {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            queued.append((work, continuation))
            // The thread sleeps on an empty queue (wake it for the first) or gathers a group (wake
            // it when the group is whole). Waking it only for a whole group lost the wake-up of a
            // last writer left alone, and a five-round run hung there.
            if queued.count == 1 || queued.count >= writers { condition.signal() }
            condition.unlock()
        }
    }

    /// Lets the thread end once the queue is empty, and waits for it.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
        stopped.wait()
    }

    private func run() {
        while true {
            condition.lock()
            while queued.isEmpty && !finished { condition.wait() }
            if queued.isEmpty {
                condition.unlock()
                return
            }
            let deadline = Date(timeIntervalSinceNow: 0.001)
            while queued.count < writers && !finished && condition.wait(until: deadline) {}
            let group = queued
            queued = []
            condition.unlock()
            do {
                try raw.write { txn in
                    for (work, _) in group {
                        switch work {
                        case let .frame(frame):
                            position += 1
                            try raw.putRecord(txn, position: position, frame)
                        case let .record(item):
                            guard layout != nil else { preconditionFailure("a record for a hand-off made without layout") }
                            try layout!.putRecordOnly(item, txn: txn)
                        }
                    }
                }
                for (_, continuation) in group { continuation.resume() }
            } catch {
                for (_, continuation) in group { continuation.resume(throwing: error) }
            }
        }
    }
}
