//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// base64url (RFC 4648 §5) without padding, written byte by byte: Foundation's base64 and three
/// `replacingOccurrences` passes cost a sign-in several microseconds of string bridging on Linux.
package func base64urlString(_ bytes: some Sequence<UInt8>) -> String {
    let input = Array(bytes)
    let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    let length = (input.count * 4 + 2) / 3
    return alphabet.withUTF8Buffer { symbols in
        String(unsafeUninitializedCapacity: length) { text in
            var out = 0
            var index = 0
            while index + 3 <= input.count {
                let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                for shift in stride(from: 18, through: 0, by: -6) {
                    text[out] = symbols[Int((group >> UInt32(shift)) & 63)]
                    out += 1
                }
                index += 3
            }
            let rest = input.count - index
            if rest > 0 {
                let group = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
                for shift in stride(from: 18, through: 18 - 6 * rest, by: -6) {
                    text[out] = symbols[Int((group >> UInt32(shift)) & 63)]
                    out += 1
                }
            }
            return out
        }
    }
}
