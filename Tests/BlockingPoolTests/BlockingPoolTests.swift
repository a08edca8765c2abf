//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import BlockingPool
import Dispatch
import Synchronization
import TestSupport
import Testing

@Suite("BlockingPool")
struct BlockingPoolTests {
    @Test("jobs given before shutdown run in order; work given after it is refused at once, never left waiting", .timeLimit(.minutes(1)))
    func refusesWorkAfterShutdown() async throws {
        let pool = BlockingPool(threads: 1, name: "test pool")
        #expect(try await pool.run { 6 * 7 } == 42)

        let order = Mutex<[Int]>([])
        let gate = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        // The pool's one thread waits at the gate, so the second job is still queued at shutdown.
        try pool.submit {
            gate.wait()
            order.withLock { $0.append(1) }
        }
        try pool.submit {
            order.withLock { $0.append(2) }
            finished.signal()
        }
        pool.shutdown()

        #expect(throws: BlockingPoolError.shutDown) { try pool.submit { order.withLock { $0.append(3) } } }
        // Before the fix this suspended forever: the job sat behind the threads' stop markers.
        await #expect(throws: BlockingPoolError.shutDown) { try await pool.run { 3 } }

        gate.signal()
        try await offThePool { finished.wait() }
        #expect(order.withLock { $0 } == [1, 2])
        // A second shutdown changes nothing, and work is still refused.
        pool.shutdown()
        await #expect(throws: BlockingPoolError.shutDown) { try await pool.run { 4 } }
    }

    @Test("a pool of several threads runs every job given, then refuses work after shutdown", .timeLimit(.minutes(1)))
    func severalThreads() async throws {
        let pool = BlockingPool(threads: 3, name: "test pool")
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for value in 0..<12 { group.addTask { try await pool.run { value * 2 } } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == (0..<12).map { $0 * 2 })
        pool.shutdown()
        await #expect(throws: BlockingPoolError.shutDown) { try await pool.run { 0 } }
    }
}
