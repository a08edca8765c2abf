//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Tells whether another process has an environment open, without waiting.
///
/// Every process that has an LMDB environment open holds a shared POSIX record lock on the first
/// byte of its `lock.mdb` (LMDB takes it at open to learn whether it is the first user). A test
/// for an exclusive lock on that byte (`F_GETLK`) conflicts with another process's shared lock and
/// never with this process's own, so it answers in one system call, without taking anything.
///
/// The descriptor stays open until the environment has been closed: POSIX record locks belong to
/// the process, and closing any descriptor of the file would drop the one LMDB holds.
// Unchecked Sendable: the descriptor is set once and closed only after the environment, by its owner.
final class OtherProcesses: @unchecked Sendable {
    private let descriptor: Int32

    /// Opens the lock file of the environment at `path`; nil when it has none (or it cannot be read).
    init?(environmentPath path: String) {
        let descriptor = open(path + "/lock.mdb", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    /// True when another process has the environment open, or when the test fails (the caller then
    /// assumes the worst).
    var present: Bool {
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        guard fcntl(descriptor, F_GETLK, &probe) == 0 else { return true }
        return probe.l_type != Int16(F_UNLCK)
    }

    /// Closes the descriptor: only after the environment is closed (see the type's comment).
    func close() {
        _ = Foundation.close(descriptor)
    }
}
