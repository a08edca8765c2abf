//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

extension String {
    /// The most bytes of UTF-8 a stream id may have, in every backend.
    package static let maxStreamIDBytes = 400

    /// Why a log cannot take this string as a stream id, or nil when it can: a stream id has
    /// 1–``maxStreamIDBytes`` bytes of UTF-8 and no NUL (NUL separates it from the version in
    /// index keys). The one rule behind both the appends' check and the store's cheap test of an
    /// account id that came from outside.
    package var streamIDProblem: String? {
        let count = utf8.count
        if count == 0 { return "it is empty" }
        if count > Self.maxStreamIDBytes { return "it has \(count) bytes; the limit is \(Self.maxStreamIDBytes)" }
        if containsNUL { return "it contains a NUL byte" }
        return nil
    }

    /// Whether the string's UTF-8 holds a NUL byte (which a stream id may not: NUL separates it from
    /// the version in index keys). `memchr` over the contiguous bytes when the string has them, as
    /// every native string does: the walk of the UTF-8 view cost about 30 instructions a byte, and
    /// every append, read and session check asks.
    package var containsNUL: Bool {
        utf8.withContiguousStorageIfAvailable { bytes in bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false }
            ?? utf8.contains(0)
    }
}
