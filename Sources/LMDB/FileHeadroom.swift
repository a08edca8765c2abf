//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB
import Foundation
import Logging
import Synchronization

/// Keeps the data file written, with zeros, some way past LMDB's last page, so that commits write
/// into blocks the file system has already allocated.
///
/// LMDB appends its new pages at the end of `data.mdb`, so without this nearly every commit makes
/// the file longer, and `fdatasync` must then commit the file system's journal (the new size and
/// blocks) as well as the data: on ext4 on this project's virtual disks that took a flush from
/// about 140 µs to 260 µs. Written ahead, most commits only overwrite blocks the file already
/// has, and the journal is committed once per extension. PostgreSQL fills its WAL segments with
/// zeros for the same reason. (`fallocate` would not do: its blocks are marked unwritten, and the
/// first write to them changes the extent, a journal commit again.)
///
/// Safety: the zeros are written only at offsets at or past the file's current size, and only
/// while the caller holds LMDB's write lock (inside a write transaction, before its commit), so no
/// process can have written a page there and none can write one meanwhile. LMDB never reads past
/// its last page, and the open check (`Environment.init`) refuses only files that are too short.
final class FileHeadroom: Sendable {
    /// A lower bound of the file's size, so that most transactions skip `fstat`.
    private let knownSize = Atomic<Int>(0)
    /// After a failed extension (the disk is full), no new attempt until LMDB's pages reach this.
    private let retryAfterUsed = Atomic<Int>(0)
    private let pageSize: Int
    private let logger = Logger(label: "LMDB.headroom")

    /// The smallest and largest amount kept ahead of the last page: a quarter of the pages in
    /// use, within these bounds. Small files (such as tests') get 1 MiB; large ones at most one
    /// journal commit per 32 MiB of pages.
    static let minimumAhead = 1 << 20
    static let maximumAhead = 32 << 20

    init(pageSize: Int) {
        self.pageSize = max(pageSize, 512)
    }

    /// How far past `used` bytes the file should reach.
    static func target(used: Int) -> Int {
        min(max(used / 4, minimumAhead), maximumAhead)
    }

    /// Extends the file if fewer than half of ``target(used:)`` bytes are written past LMDB's last
    /// page. Call it with LMDB's write lock held (in a write transaction, before the commit).
    func extendIfNeeded(_ environment: OpaquePointer, path: String) {
        let used = Environment.usedBytes(environment, pageSize: pageSize)
        let wanted = Self.target(used: used)
        if knownSize.load(ordering: .relaxed) >= used + wanted / 2 { return }
        if used < retryAfterUsed.load(ordering: .relaxed) { return }
        guard let (descriptor, bytes) = Environment.dataFile(environment) else {
            logger.warning("cannot read the size of the data file", metadata: ["path": "\(path)", "errno": "\(errno)"])
            retryAfterUsed.store(used + wanted, ordering: .relaxed)
            return
        }
        var size = bytes
        knownSize.store(size, ordering: .relaxed)
        if size >= used + wanted / 2 { return }
        // From the file's end (page-aligned; LMDB's files always are) to the target.
        size = (size + pageSize - 1) / pageSize * pageSize
        let end = (used + wanted + pageSize - 1) / pageSize * pageSize
        let written = Self.writeZeros(descriptor, from: size, to: end)
        knownSize.store(written, ordering: .relaxed)
        if written < end {
            let code = errno
            logger.warning(
                "cannot write the data file ahead of its last page; commits go on, each one growing the file",
                metadata: ["path": "\(path)", "error": "\(String(cString: strerror(code)))", "reached": "\(written)"])
            retryAfterUsed.store(used + wanted, ordering: .relaxed)
        }
    }

    /// Writes zeros over `start..<end`; returns where the writes got to (`end` unless one failed,
    /// with `errno` set).
    private static func writeZeros(_ descriptor: Int32, from start: Int, to end: Int) -> Int {
        let piece = 256 << 10
        return withUnsafeTemporaryAllocation(byteCount: piece, alignment: 4096) { zeros in
            zeros.initializeMemory(as: UInt8.self, repeating: 0)
            var offset = start
            while offset < end {
                let count = min(piece, end - offset)
                let result = pwrite(descriptor, zeros.baseAddress, count, off_t(offset))
                if result < 0 {
                    if errno == EINTR { continue }
                    return offset
                }
                if result == 0 { return offset }
                offset += result
            }
            return offset
        }
    }
}
