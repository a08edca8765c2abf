//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// LMDB's default order of keys: their bytes compared as unsigned, then the shorter first.
public enum KeyOrder {
    /// Whether key `lhs` sorts before key `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: the first key.
    ///   - rhs: the second key.
    /// - Returns: true when `lhs` sorts strictly before `rhs`.
    public static func precedes(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        let common = min(lhs.count, rhs.count)
        let order = common == 0 ? 0 : memcmp(lhs.baseAddress!, rhs.baseAddress!, common)
        return order != 0 ? order < 0 : lhs.count < rhs.count
    }
}
