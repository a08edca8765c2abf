//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto

/// `bytes` as lowercase hexadecimal, two digits each, written straight into the string's storage.
/// (`String(format: "%02x")` a byte at a time costs a formatter call per byte; a session check
/// hashes its token on every request.)
package func hexString(_ bytes: UnsafeRawBufferPointer) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { text in
        @inline(__always) func digit(_ value: UInt8) -> UInt8 { value < 10 ? value &+ 48 : value &+ 87 }
        var offset = 0
        for byte in bytes {
            text[offset] = digit(byte >> 4)
            text[offset &+ 1] = digit(byte & 0x0f)
            offset &+= 2
        }
        return offset
    }
}

extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each.
    package var hexString: String {
        if let text = withContiguousStorageIfAvailable({ AccountSecurity.hexString(UnsafeRawBufferPointer($0)) }) { return text }
        return Array(self).withUnsafeBytes { AccountSecurity.hexString($0) }
    }
}

extension Digest {
    /// The digest as lowercase hexadecimal, read in place.
    package var hexString: String {
        withUnsafeBytes { AccountSecurity.hexString($0) }
    }
}
