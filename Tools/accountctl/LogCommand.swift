//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import EventLogProtocol
import Foundation
import SpeziAccountStore

/// `accountctl log`: the raw records, in batches; `--follow` keeps printing new ones.
struct Log: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Print the log's records (position, time, stream, type, actor); --follow waits for new ones.",
        discussion: "Payloads are not printed (personal data is sealed); use history for what an event changed."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "The first position to print.")
    var from: UInt64 = 1

    @Flag(help: "One JSON object per record.")
    var json = false

    @Flag(help: "After the existing records, print new ones as they are committed, until interrupted.")
    var follow = false

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                var next = max(from, 1)
                while true {
                    let batch = try await store.log.read(from: next, limit: 512)
                    for record in batch { print(line(for: record)) }
                    guard let last = batch.last else { break }
                    next = last.position + 1
                }
                guard follow else { return }
                fflush(nil)
                for try await record in store.log.subscribeRecords(after: next - 1) {
                    print(line(for: record))
                    fflush(nil)
                }
            }
        }
    }

    func line(for record: RecordedEvent) -> String {
        if json {
            var object: [String: Any] = [
                "position": record.position, "stream": record.streamID, "streamVersion": record.streamVersion,
                "eventID": record.eventID.uuidString.lowercased(), "type": record.type, "schemaVersion": record.schemaVersion,
                "time": isoTime(record.timestamp), "payloadBytes": record.payload.count, "hash": record.hash.description
            ]
            if let actor = record.metadata.actor { object["actor"] = actor }
            if let correlation = record.metadata.correlationID { object["correlationID"] = correlation }
            if let causation = record.metadata.causationID { object["causationID"] = causation }
            if !record.metadata.extra.isEmpty { object["extra"] = record.metadata.extra }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
        var text = "#\(record.position)  \(isoTime(record.timestamp))  \(record.streamID) v\(record.streamVersion)  \(record.type)"
        if let actor = record.metadata.actor { text += "  by \(actor)" }
        return text
    }
}
