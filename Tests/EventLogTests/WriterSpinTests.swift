//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import MetricsTestKit
import TestSupport
import Testing

/// After a commit that answered one append, the writer thread spins 30 µs for the next before it
/// sleeps. Appends that come milliseconds apart (a server's sign-ins) never meet the spin: after a
/// spin whose appender came back later than 60 µs, the thread skips the next 1, 2, 4, … up to 64
/// chances; one back sooner makes it spin after every such commit again (issue 62).
@Suite("The writer's spin for the next append")
struct WriterSpinTests {
    static func spins(_ log: EventLog) -> Int64 {
        TestMetricsBackend.counterTotal("eventlog_writer_spins", [("log", log.path)])
    }

    @Test("appends 2 ms apart: the thread spins after 5 of 30 commits, not after every one")
    func sparseAppendsStopTheSpin() async throws {
        _ = TestMetricsBackend.shared  // before the log makes its metrics
        // Durable: the appends go to the writer thread (a relaxed log's lone appender commits inline).
        try await withTemporaryLog { log, _ in
            for index in 0..<30 {
                _ = try await log.append(event("t", "\(index)"), to: "s")
                try await Task.sleep(for: .milliseconds(2))
            }
            // Spins after commits 1, 3, 6, 11 and 20, each followed by a late append (so skipping
            // 1, 2, 4, 8, then 16 chances); the next would be after the 37th.
            #expect(Self.spins(log) == 5)
            #expect(try await log.read(from: 1, limit: 100).map(\.text) == (0..<30).map { "\($0)" })
        }
    }
}
