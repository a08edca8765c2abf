//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation

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
