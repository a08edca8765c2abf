//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A webhook receiver on 127.0.0.1 (`POST /hook`) that answers as its plan says: a status, or a
/// stall longer than any sender's timeout, then 204 once the plan is used up. It keeps every
/// request it got, and whether it took it (answered 2xx).
final class TestWebhookReceiver: Sendable {
    enum Answer: Sendable {
        case status(Int)
        /// Sends nothing for 3 s (far longer than the tests' sender timeout).
        case stall
    }

    struct Received: Sendable {
        let id: String
        let timestamp: String
        let signature: String
        let body: Data
        let taken: Bool

        /// The body's `data.position` and `data.accountId`.
        var position: UInt64 { ((object["data"] as? [String: Any])?["position"] as? NSNumber)?.uint64Value ?? 0 }
        var accountId: String { (object["data"] as? [String: Any])?["accountId"] as? String ?? "" }
        var type: String { object["type"] as? String ?? "" }
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    let port: Int
    let plan = Mutex<[Answer]>([])
    /// Every request taken is delayed this long.
    let delay = Mutex<Duration>(.zero)
    /// Once this many requests were taken, each further one waits this long (to catch a sender
    /// mid-stream); nil: none waits.
    let hold = Mutex<(after: Int, wait: Duration)?>(nil)
    let received = Mutex<[Received]>([])

    var url: String { "http://127.0.0.1:\(port)/hook" }

    init(port: Int) {
        self.port = port
    }

    /// The requests taken, first arrival of each id only, in arrival order.
    var taken: [Received] {
        var seen: Set<String> = []
        return received.withLock { $0 }.filter { $0.taken && seen.insert($0.id).inserted }
    }

    static func with(_ body: @Sendable (TestWebhookReceiver) async throws -> Void) async throws {
        let holder = Mutex<TestWebhookReceiver?>(nil)
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            guard let receiver = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let bytes = Data(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let answer = receiver.plan.withLock { plan -> Answer in plan.isEmpty ? .status(204) : plan.removeFirst() }
            let header = { (name: String) in request.headers[HTTPField.Name(name)!] ?? "" }
            var status = 204
            switch answer {
            case let .status(code): status = code
            case .stall:
                try? await Task.sleep(for: .seconds(3))
                status = 504
            }
            let delay = receiver.delay.withLock { $0 }
            if delay > .zero { try await Task.sleep(for: delay) }
            if let hold = receiver.hold.withLock({ $0 }), receiver.received.withLock({ $0.filter(\.taken).count }) >= hold.after {
                try await Task.sleep(for: hold.wait)
            }
            receiver.received.withLock {
                $0.append(
                    Received(
                        id: header("webhook-id"), timestamp: header("webhook-timestamp"), signature: header("webhook-signature"), body: bytes,
                        taken: (200..<300).contains(status)))
            }
            return Response(status: HTTPResponse.Status(code: status))
        }
        try await withLoopbackApplication(router, label: "test-webhook-receiver") { port in
            let receiver = TestWebhookReceiver(port: port)
            holder.withLock { $0 = receiver }
            try await body(receiver)
        }
    }
}
