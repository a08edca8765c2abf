//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LogRecordFormat
import TestSupport
import Testing

@Suite("Record templates: what appenders encode, the writer seals")
struct RecordTemplateTests {
    @Test("templates sealed in order are byte for byte the records that encode writes, with the same chain")
    func templatesMatchEncodedRecords() throws {
        var generator = SplitMix64(seed: 0x7E3B_1A7E)
        let metadata = [
            EventMetadata(),
            EventMetadata(actor: "admin", correlationID: "c-1"),
            EventMetadata(actor: "ä-actor", extra: ["schema": "2", "zone": "Europe/Zürich", "": "empty key"])
        ]
        let payloads = [Data(), Data("{}".utf8), Data((0..<1_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) })]
        var events: [ProposedEvent] = []
        for index in 0..<9 {
            events.append(
                ProposedEvent(
                    type: index % 2 == 0 ? "account.created" : "t", schemaVersion: UInt32(index), metadata: metadata[index % 3],
                    payload: payloads[(index / 3) % 3]))
        }
        let checked = try CheckedAppend(
            events, to: "stream-ö-\(generator.next())", expectedVersion: .any, claims: [], releases: [], timestamps: nil, maxPayload: 1 << 20)
        let templates = checked.templates()
        #expect(templates.count == checked.sizes.reduce(0, +))

        var previousFromTemplates = ChainHash.genesis
        var previousFromEncode = ChainHash.genesis
        // One sealer for every record: its buffer is reused across sizes (empty to 1,000 bytes).
        var sealer = RecordSealer()
        var offset = 0
        for index in events.indices {
            let size = checked.sizes[index]
            let position = UInt64(100 + index)
            let version = UInt64(7 + index)
            let timestamp = Int64(1_700_000_000_000_000) + Int64(index) * 1_001
            var record = Array(templates[offset..<(offset + size)])
            let hash = record.withUnsafeMutableBytes { buffer in
                RecordFormat.seal(buffer, position: position, streamVersion: version, timestampMicros: timestamp, previous: previousFromTemplates)
            }
            let encoded = RecordFormat.encode(
                position: position, streamVersion: version, timestampMicros: timestamp, streamID: checked.streamID, event: events[index],
                pairs: checked.metadataPairs[index], size: size, previous: previousFromEncode)
            #expect(record == encoded.bytes, "record \(index)")
            #expect(hash == encoded.hash, "chain hash of record \(index)")
            let sealed = sealer.seal(
                position: position, streamVersion: version, timestampMicros: timestamp, streamID: checked.streamID, event: events[index],
                pairs: checked.metadataPairs[index], size: size, previous: previousFromEncode)
            #expect(sealed.hash == encoded.hash && sealed.crc == encoded.crc, "sealed record \(index)")
            previousFromTemplates = hash
            previousFromEncode = encoded.hash
            offset += size
        }
        // The records were chained (the comparison above did not pass on empty work).
        #expect(previousFromTemplates != ChainHash.genesis)
    }
}
