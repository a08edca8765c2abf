//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// Random 64-bit words from the system's secure generator, drawn 4 KiB at a time.
///
/// Every event gets an id, and one `getrandom` call per id cost more than the rest of making it
/// (the kernel sets up its generator state on every call): the pool reads 4 KiB of
/// `/dev/urandom` at once.
///
/// A child made by `fork` must not draw the words its parent will also draw: a `pthread_atfork`
/// handler counts forks (an atomic add, safe in a child whose other threads are gone), and a pool
/// filled before the last fork is filled again. (Asking `getpid` on every draw made appends from
/// 64 writers a quarter slower here.)
enum RandomWords {
    private struct Pool: ~Copyable {
        var words = [UInt64](repeating: 0, count: 512)
        var next = 512
        var forks = 0
    }

    private static let pool = Mutex(Pool())
    private static let forks = Atomic<Int>(0)
    private static let forkHandler: Void = {
        _ = pthread_atfork(nil, nil) { RandomWords.forks.add(1, ordering: .relaxed) }
    }()

    /// The next random word.
    static func next() -> UInt64 {
        forkHandler
        let forks = forks.load(ordering: .relaxed)
        return pool.withLock { pool in
            if pool.next == pool.words.count || pool.forks != forks {
                pool.words.withUnsafeMutableBytes(fill)
                pool.next = 0
                pool.forks = forks
            }
            defer { pool.next += 1 }
            return pool.words[pool.next]
        }
    }

    /// Fills `buffer` from `/dev/urandom` (one read for the whole pool); where it cannot be read,
    /// word by word from the standard library's generator (one `getrandom` call each).
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        let file = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        var filled = 0
        if file >= 0 {
            while filled < buffer.count {
                let count = read(file, buffer.baseAddress! + filled, buffer.count - filled)
                if count > 0 {
                    filled += count
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(file)
        }
        guard filled < buffer.count else { return }
        var generator = SystemRandomNumberGenerator()
        for offset in stride(from: 0, to: buffer.count, by: 8) {
            buffer.storeBytes(of: generator.next() as UInt64, toByteOffset: offset, as: UInt64.self)
        }
    }
}
