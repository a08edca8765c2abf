//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Fixed-width big-endian integers: keys that sort numerically under LMDB's default comparator.
public enum BigEndian {
    /// The 8 bytes of `value`, most significant first.
    ///
    /// - Parameter value: the number.
    /// - Returns: its 8 bytes, most significant first.
    @inlinable
    public static func bytes(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// Reads a big-endian `UInt64` at `offset`; the caller has checked the bounds.
    ///
    /// - Parameters:
    ///   - buffer: the bytes to read from.
    ///   - offset: where the 8 bytes start.
    /// - Returns: the number they hold.
    @inlinable
    public static func uint64(_ buffer: UnsafeRawBufferPointer, at offset: Int = 0) -> UInt64 {
        UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Reads a big-endian `UInt32` at `offset`; the caller has checked the bounds.
    ///
    /// - Parameters:
    ///   - buffer: the bytes to read from.
    ///   - offset: where the 4 bytes start.
    /// - Returns: the number they hold.
    @inlinable
    public static func uint32(_ buffer: UnsafeRawBufferPointer, at offset: Int = 0) -> UInt32 {
        UInt32(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Reads a big-endian `UInt16` at `offset`; the caller has checked the bounds.
    ///
    /// - Parameters:
    ///   - buffer: the bytes to read from.
    ///   - offset: where the 2 bytes start.
    /// - Returns: the number they hold.
    @inlinable
    public static func uint16(_ buffer: UnsafeRawBufferPointer, at offset: Int = 0) -> UInt16 {
        UInt16(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
}
