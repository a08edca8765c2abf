//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CChecksum

/// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, as in iSCSI, ext4 and LevelDB), the
/// record checksum. Computed with the CPU's CRC32 instruction where there is one.
public enum CRC32C {
    /// The checksum of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        cchecksum_crc32c(0, bytes.baseAddress, bytes.count)
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The checksum by the portable table method, whatever the CPU offers (to test one against the other).
    public static func portableChecksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { cchecksum_crc32c_portable(0, $0.baseAddress, $0.count) }
    }

    /// True when this machine computes it with a hardware instruction.
    public static var usesHardware: Bool { cchecksum_crc32c_is_hardware() != 0 }
}
