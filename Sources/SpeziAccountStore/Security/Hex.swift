//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The sixteen digits, made once rather than on every call.
private let hexDigits = Array("0123456789abcdef".utf8)

extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each. (`String(format: "%02x")` a byte at a
    /// time costs a formatter call per byte; a session check hashes its token on every request.)
    package var hexString: String {
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
