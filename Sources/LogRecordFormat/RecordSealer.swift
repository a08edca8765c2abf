//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol

/// Seals records one after another in one reused buffer, for their chain hash and CRC only:
/// ``RecordFormat/encode(position:streamVersion:timestampMicros:streamID:event:pairs:size:previous:)``
/// without an array for every record. The PostgreSQL log stores its records as columns, so it needs
/// the record's bytes only to hash them, when it appends and when it verifies.
package struct RecordSealer {
    private var scratch: [UInt8] = []

    package init() {}

    /// Writes the record (exactly `size` bytes, ``RecordFormat/encodedSize(streamID:event:pairs:maxPayload:)``)
    /// chained to `previous`, and returns its chain hash and CRC.
    package mutating func seal(
        position: UInt64, streamVersion: UInt64, timestampMicros: Int64, streamID: String, event: ProposedEvent,
        pairs: [(String, String)], size: Int, previous: ChainHash
    ) -> (hash: ChainHash, crc: UInt32) {
        if scratch.count < size { scratch = [UInt8](repeating: 0, count: max(size, scratch.count * 2)) }
        return scratch.withUnsafeMutableBytes { buffer in
            let record = UnsafeMutableRawBufferPointer(rebasing: buffer[..<size])
            let hash = RecordFormat.write(
                into: record, position: position, streamVersion: streamVersion, timestampMicros: timestampMicros, streamID: streamID,
                event: event, pairs: pairs, previous: previous)
            return (hash, UInt32(bigEndian: record.loadUnaligned(fromByteOffset: RecordFormat.Offset.checksum, as: UInt32.self)))
        }
    }
}
