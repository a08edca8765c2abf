//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// How an environment's commits reach the disk.
public enum SyncMode: Sendable, Equatable {
    /// Every commit is flushed with `fdatasync` before it returns (LMDB's default).
    case durable
    /// Commits are not flushed (`MDB_NOSYNC`): a process crash loses nothing, but an OS crash or a
    /// power loss may lose the most recent commits and, where the file system reorders writes, leave
    /// the file damaged. For tests and bulk import; call ``Environment/sync()`` to flush by hand.
    case relaxed
    /// Data pages are flushed but the commit record is not (`MDB_NOMETASYNC`): an OS crash or power
    /// loss may undo the last commit, never damage the file. One flush per commit instead of two;
    /// for data that can be recomputed, such as projections.
    case lastCommitMayRollBack
}

/// Options for opening an ``Environment``.
public struct EnvironmentOptions: Sendable {
    /// The most named databases the environment may hold.
    public var maxDatabases: UInt32 = 16
    /// The most concurrent read transactions (LMDB's reader table size).
    public var maxReaders: UInt32 = 126
    /// The map size to open with. The file grows on demand; the map only reserves address space.
    public var initialMapSize: Int = 1 << 30
    /// The largest single growth step once the map is full; below it, the map doubles.
    public var maxGrowthStep: Int = 4 << 30
    /// Whether commits are flushed to disk.
    public var sync: SyncMode = .durable
    /// Open without write access.
    public var readOnly = false
    /// Whether the data file is kept written (with zeros) some way past its last page, so that
    /// flushed commits overwrite blocks the file already has instead of growing it: each flush then
    /// skips the file system's journal. Only with a flushing ``sync`` mode; the file is up to
    /// 32 MiB (a quarter of its pages, at least 1 MiB) longer than its pages.
    public var writesAhead = true

    /// Creates the default value.
    public init() {}
}
