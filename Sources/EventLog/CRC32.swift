//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// CRC-32 as in zlib, PNG and Ethernet (IEEE 802.3, reflected polynomial 0xEDB88320), computed
/// eight bytes at a time. Python's `zlib.crc32` gives the same value.
public enum CRC32 {
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
            }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for slice in 1..<8 {
                crc = tables[Int(crc & 0xFF)] ^ (crc >> 8)
                tables[slice * 256 + byte] = crc
            }
        }
        return tables
    }()

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { table in
            let table = table.baseAddress!
            var index = 0
            let count = bytes.count
            while index + 8 <= count {
                let low = bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self).littleEndian ^ crc
                let high = bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self).littleEndian
                crc = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return ~crc
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
