//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import PostgresNIO
import Synchronization

// Why this exists: postgres-nio sends a statement by writing it into its connection's channel
// without a write promise. Once a closed channel's handlers are gone (NIO removes them just after
// the close), such a write is dropped and the statement is neither answered nor failed. A pooled
// connection leased just before the server went down, or a transaction's `ROLLBACK` after its
// connection was lost, meets exactly that: the operation then waited for its whole deadline (15 s
// by default) with nothing logged, the restart fault test's rare failure (issue 40).

extension PostgresConnection {
    /// Runs `body`; `abandon` is called with a transient failure as soon as this connection closes
    /// (at once when it is closed already), so that the operation it belongs to is answered then
    /// rather than wait for a statement the closed connection will never answer.
    package func whileOpen<T>(
        isolation: isolated (any Actor)? = #isolation, abandon: @escaping @Sendable (any Error) -> Void, _ body: () async throws -> sending T
    ) async throws -> sending T {
        let ticket = ClosedConnectionWatch.shared.watch(self, abandon: abandon)
        defer { if let ticket { ClosedConnectionWatch.shared.remove(ticket) } }
        return try await body()
    }
}

/// What an operation whose connection closed before it was answered fails with: transient, so it
/// is tried again (a try that did commit is answered by its event ids).
enum PostgresOperation {
    static func connectionClosed() -> PostgresFailure {
        PostgresFailure(description: "the connection closed before the server answered", isTransient: true)
    }
}

/// Calls the operations waiting on a connection when it closes. Each connection gets one close
/// callback however many operations use it in its life; an operation adds itself for as long as it
/// runs. A connection is freed only after it closed (postgres-nio asserts it), and its entry goes
/// at the close, so an entry never outlives its connection.
final class ClosedConnectionWatch: Sendable {
    static let shared = ClosedConnectionWatch()

    struct Ticket {
        fileprivate let connection: ObjectIdentifier
        fileprivate let id: UInt64
    }

    private struct State {
        var waiting: [ObjectIdentifier: [UInt64: @Sendable (any Error) -> Void]] = [:]
        var lastID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Calls `abandon` when `connection` closes, unless the ticket is removed first; at once (and
    /// nil) when it is closed already.
    func watch(_ connection: PostgresConnection, abandon: @escaping @Sendable (any Error) -> Void) -> Ticket? {
        let key = ObjectIdentifier(connection)
        let outcome = state.withLock { state -> (Ticket, first: Bool)? in
            let known = state.waiting[key] != nil
            // A connection seen for the first time is checked here: one that closed already
            // (its close callback ran, or is about to) is not added.
            if !known && connection.isClosed { return nil }
            state.lastID += 1
            state.waiting[key, default: [:]][state.lastID] = abandon
            return (Ticket(connection: key, id: state.lastID), !known)
        }
        guard let (ticket, first) = outcome else {
            abandon(PostgresOperation.connectionClosed())
            return nil
        }
        if first {
            connection.closeFuture.whenComplete { [self] _ in
                let waiters = state.withLock { $0.waiting.removeValue(forKey: key) } ?? [:]
                for abandon in waiters.values { abandon(PostgresOperation.connectionClosed()) }
            }
        }
        return ticket
    }

    /// The operation ended: it no longer waits on the connection.
    func remove(_ ticket: Ticket) {
        // The connection's entry (and its one close callback) stays while the connection is open.
        state.withLock { _ = $0.waiting[ticket.connection]?.removeValue(forKey: ticket.id) }
    }
}
