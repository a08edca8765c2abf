//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

extension String {
    /// Whether the string's UTF-8 holds a NUL byte (which a stream id may not: NUL separates it from
    /// the version in index keys). `memchr` over the contiguous bytes when the string has them, as
    /// every native string does: the walk of the UTF-8 view cost about 30 instructions a byte, and
    /// every append, read and session check asks.
    package var containsNUL: Bool {
        utf8.withContiguousStorageIfAvailable { bytes in bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false }
            ?? utf8.contains(0)
    }
}
