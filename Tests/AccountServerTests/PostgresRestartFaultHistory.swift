//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import Synchronization

// The PostgreSQL restart test's requests and history: what each client sent and was answered,
// and what the answers say the log must hold.

extension PostgresRestartFaultTests {
    /// One request from a client of its own (a random forwarded address: the per-client limits
    /// do not mix the test's clients); no status when it got no answer within the client timeout.
    static func send(
        _ base: String, _ method: String, _ path: String, token: String? = nil, json: String? = nil, key: String? = nil
    ) async -> FaultAnswer {
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method)
        if let key { request.headers.add(name: "Idempotency-Key", value: key) }
        request.headers.add(name: "X-Forwarded-For", value: "10.\(Int.random(in: 0...255)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.body = .bytes(ByteBuffer(string: json))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: clientTimeout)
            let data = Data(buffer: try await response.body.collect(upTo: 1 << 20))
            return FaultAnswer(status: Int(response.status.code), text: String(decoding: data, as: UTF8.self), error: nil)
        } catch {
            return FaultAnswer(status: nil, text: "", error: String(describing: error))
        }
    }

    /// The longest wait of postgres-nio's pool before its next connection attempt, once its
    /// attempts have failed for `outage` (100 ms × 1.25ⁿ⁻¹ for the n-th, 3 % jitter).
    static func poolSpacing(after outage: Duration) -> Duration {
        var elapsed = 0.0
        var spacing = 0.1
        let seconds = Double(outage.components.seconds) + Double(outage.components.attoseconds) / 1e18
        while elapsed + spacing < seconds {
            elapsed += spacing
            spacing *= 1.25
        }
        return .milliseconds(Int(spacing * 1.03 * 1_000))
    }

    static func text(_ duration: Duration) -> String {
        String(format: "%.2f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    static func statusCounts(_ ops: [FaultOp]) -> String {
        var counts: [String: Int] = [:]
        for op in ops { counts["\(op.kind) \(op.status.map(String.init) ?? "none")", default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }
}

/// An answer, or the error that stood in for one.
struct FaultAnswer: Sendable {
    let status: Int?
    let text: String
    let error: String?

    /// The body as a JSON object (empty when it is none).
    var body: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }

    /// No answer, or one that says the outcome is not known (the server could not reach its log).
    var isUnknownOutcome: Bool { status == nil || (status == 503 && text.contains("storage-unavailable")) }

    /// The account id of a signup's answer.
    var accountId: String? { (body["account"] as? [String: Any])?["accountId"] as? String }
}

/// One request of the history.
struct FaultOp: Sendable {
    enum Kind: Sendable, CustomStringConvertible {
        case signup, login, change, delete

        var isWrite: Bool { self != .login }
        var description: String {
            switch self {
            case .signup: "signup"
            case .login: "login"
            case .change: "change"
            case .delete: "delete"
            }
        }
    }

    let kind: Kind
    let node: Int
    let userId: String
    let status: Int?
    let error: String?
    let started: ContinuousClock.Instant
    let ended: ContinuousClock.Instant

    init(kind: Kind, node: Int, userId: String, answer: FaultAnswer, started: ContinuousClock.Instant) {
        self.kind = kind
        self.node = node
        self.userId = userId
        self.status = answer.status
        self.error = answer.error
        self.started = started
        self.ended = .now
    }

    var summary: String { "\(kind) \(userId) on node \(node): \(error ?? "")" }
}

/// An account a client made, and what the answers it got say the log must hold.
struct TrackedAccount: Sendable {
    enum Outcome: Sendable {
        /// A request about it got no answer: what the log holds is not known.
        case unknown
        /// Signed up (acknowledged), with `givenName` its last acknowledged change.
        case created
        /// The signup was answered as failed: it must not be in the log.
        case refused(status: Int)
        /// The deletion was acknowledged.
        case deleted
        /// The deletion was answered as failed: the account must still be there.
        case deletionRefused(status: Int)
        /// A change was answered as failed: it must not be in the log (the account is left alone after it).
        case changeRefused(value: String, status: Int)
    }

    let userId: String
    let password: String
    var token: String?
    var outcome = Outcome.unknown
    var givenName = "Init"
    /// The signup's Idempotency-Key and body.
    var signup: (key: String, json: String)?
    /// The acknowledged signup's account id and token, and when it was acknowledged.
    var acknowledged: (accountId: String, token: String, at: ContinuousClock.Instant)?

    init(userId: String, password: String) {
        self.userId = userId
        self.password = password
    }

    /// Live and certain: the clients use it further.
    var isUsable: Bool {
        if case .created = outcome { return true }
        return false
    }
}

/// The requests and accounts of a run, and PostgreSQL's outages.
final class FaultHistory: Sendable {
    struct State {
        var ops: [FaultOp] = []
        var accounts: [TrackedAccount] = []
        var outages: [(from: ContinuousClock.Instant, to: ContinuousClock.Instant)] = []
        var retried = 0
        var settledByRetry = 0
    }

    private let state = Mutex(State())

    func add(_ op: FaultOp) { state.withLock { $0.ops.append(op) } }
    func record(_ accounts: [TrackedAccount]) { state.withLock { $0.accounts += accounts } }
    func outage(from: ContinuousClock.Instant, to: ContinuousClock.Instant) { state.withLock { $0.outages.append((from, to)) } }
    /// A keyed write was sent again; `settled`: its last answer was a definite one.
    func retried(settled: Bool) {
        state.withLock { state in
            state.retried += 1
            if settled { state.settledByRetry += 1 }
        }
    }

    var retries: (sent: Int, settled: Int) { state.withLock { ($0.retried, $0.settledByRetry) } }

    var all: [FaultOp] { state.withLock { $0.ops } }
    var accounts: [TrackedAccount] { state.withLock { $0.accounts } }
    var outages: [(from: ContinuousClock.Instant, to: ContinuousClock.Instant)] { state.withLock { $0.outages } }
}

/// Whether the clients go on.
final class RunningFlag: Sendable {
    private let running = Atomic(true)

    var isRunning: Bool { running.load(ordering: .relaxed) }
    func stop() { running.store(false, ordering: .relaxed) }
}
