//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB

/// A fresh directory under the system's temporary folder, removed by `cleanup()`.
struct TemporaryDirectory {
    let url: URL

    init(_ label: String = "eventlog") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var path: String { url.path }

    func path(_ component: String) -> String { url.appendingPathComponent(component).path }

    func cleanup() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Opens a log in a new temporary directory, runs `body`, closes the log and removes the folder.
func withTemporaryLog(options: EventLogOptions = EventLogOptions(), _ body: (EventLog, TemporaryDirectory) async throws -> Void) async throws {
    let directory = TemporaryDirectory()
    defer { directory.cleanup() }
    let log = try EventLog(path: directory.path("log"), options: options)
    defer { log.close() }
    try await body(log, directory)
}

/// Relaxed options for tests that do not test durability (no fsync).
var relaxed: EventLogOptions {
    var options = EventLogOptions()
    options.sync = .relaxed
    return options
}

func event(_ type: String = "test.event", _ text: String = "payload", id: UUID = UUID(), actor: String? = nil) -> ProposedEvent {
    ProposedEvent(eventID: id, type: type, metadata: EventMetadata(actor: actor), payload: Data(text.utf8))
}

extension RecordedEvent {
    var text: String { String(decoding: payload, as: UTF8.self) }
}

/// Writes a closed log of `count` records, one append each (`record <position>` to the stream
/// `stream(position)`), with every record in the indexes (no unindexed tail).
func makeIndexedLog(at path: String, count: Int, stream: (Int) -> String) async throws {
    var options = relaxed
    options.indexTailLimit = 0
    let log = try EventLog(path: path, options: options)
    for position in 1...count {
        _ = try await log.append(event("t", "record \(position)"), to: stream(position))
    }
    await log.close()
}

/// The entries of one of a log's index databases (value: a big-endian position), in key order.
func indexEntries(_ txn: Transaction, _ database: Database) throws -> [(key: [UInt8], position: UInt64)] {
    try txn.withCursor(database) { cursor in
        var result: [([UInt8], UInt64)] = []
        var entry = try cursor.first()
        while let current = entry {
            result.append((Array(current.key), BigEndian.uint64(current.value)))
            entry = try cursor.next()
        }
        return result
    }
}
