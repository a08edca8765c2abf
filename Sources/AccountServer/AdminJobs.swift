//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// A long piece of admin work (a verify, a rebuild) running in the background, with its progress.
struct AdminJob: Sendable, Encodable {
    enum State: String, Sendable, Encodable {
        case running, finished, failed
    }

    let id: String
    /// `verify` or `rebuild`.
    let kind: String
    /// What it works on (the log, or a projection's name).
    let target: String
    let admin: String
    var state = State.running
    /// Records done so far, and of how many (0 until known).
    var done: UInt64 = 0
    var total: UInt64 = 0
    /// A one-line outcome once it ended.
    var result: String?
}

/// The server's jobs (in memory: each server keeps its own; the audit stream keeps their outcomes).
final class AdminJobs: Sendable {
    private let jobs = Mutex<[String: AdminJob]>([:])
    /// Jobs that ended are forgotten beyond this many.
    private let keep = 64

    /// Starts `work` as a job; it reports progress with `(done, total)` and returns the outcome.
    func start(
        kind: String, target: String, admin: String,
        _ work: @escaping @Sendable (_ progress: @escaping @Sendable (UInt64, UInt64) -> Void) async throws -> String
    ) -> AdminJob {
        let job = AdminJob(id: UUID().uuidString.lowercased(), kind: kind, target: target, admin: admin)
        jobs.withLock { jobs in
            let ended = jobs.values.filter { $0.state != .running }
            if ended.count >= keep, let oldest = ended.min(by: { $0.id < $1.id }) { jobs[oldest.id] = nil }
            jobs[job.id] = job
        }
        Task {
            do {
                let result = try await work { done, total in
                    self.update(job.id) {
                        $0.done = done
                        $0.total = total
                    }
                }
                update(job.id) {
                    $0.state = .finished
                    $0.result = result
                }
            } catch {
                update(job.id) {
                    $0.state = .failed
                    $0.result = "\(error)"
                }
            }
        }
        return job
    }

    func job(_ id: String) -> AdminJob? {
        jobs.withLock { $0[id] }
    }

    private func update(_ id: String, _ change: (inout AdminJob) -> Void) {
        jobs.withLock { jobs in
            guard var job = jobs[id] else { return }
            change(&job)
            jobs[id] = job
        }
    }
}
