//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Which failures of the server or the connection may pass by themselves (a lost connection, a
/// server that is restarting or not answering yet): those are retried, the others are final.
enum PostgresTransience {
    /// True for a lost or refused connection, a server shutting down or starting up, a deadline
    /// that ran out, a deadlock or serialization failure; false for what the same request would
    /// meet again (a refused login, a missing table, a malformed answer).
    static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case let error as PSQLError:
            switch error.code {
            case .server:
                return error.serverInfo?[.sqlState].map(isTransient(sqlState:)) ?? false
            case .clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown, .queryCancelled:
                return true
            default:
                return false
            }
        case let error as PostgresTransactionError:
            return [error.beginError, error.closureError, error.commitError, error.rollbackError].contains { $0.map(isTransient) ?? false }
        case let error as any TransientFailure:
            return error.isTransient
        case let error as EventLogError:
            if case let .storage(inner) = error { return isTransient(inner) }
            return false
        case is IOError, is ChannelError, is NIOConnectionError:
            return true
        default:
            return false
        }
    }

    /// SQLSTATE classes of failures that pass: 08 connection exception, 53 insufficient
    /// resources, 57P01–57P05 (the server is shutting down, crashed, starting up, idle session
    /// ended), 40001 and 40P01 (serialization failure, deadlock), 55P03 (a lock not available).
    static func isTransient(sqlState: String) -> Bool {
        sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || sqlState.hasPrefix("57P") || ["40001", "40P01", "55P03"].contains(sqlState)
    }

    /// The longest try `attempt` (1, 2, …) of an operation may take within the operation's
    /// `limit` while the server is known to be out: a third of it (at least 5 s) for the first,
    /// doubling with each try after (outside an outage a try has the whole limit). A
    /// request caught by a crash of the server (its connection neither answered nor closed) is
    /// given up soon and tried again on another connection, rather than holding its caller for the
    /// whole limit; a big batch that a loaded machine takes longer to commit gets more time at its
    /// next try (a try that committed after all is answered by its event ids, never duplicated).
    static func tryLimit(within limit: Duration, attempt: Int = 1) -> Duration {
        max(limit / 3, .seconds(5)) * (1 << min(max(attempt - 1, 0), 4))
    }

    /// What an operation sent before an outage was seen has left once it is (see
    /// ``DeadlineWatch/shorten(owner:to:)``): its server went away, so its answer most likely
    /// will not come; a retry on a new connection is answered by the event ids if it did commit.
    static let inFlightLimit = Duration.seconds(2)

    /// The wait before try `attempt` (1 for the first retry): doubling from `first` up to
    /// `cap`, with a random part (the upper half of the span, "equal jitter") so that the nodes
    /// that lost the same server do not all come back in the same millisecond.
    static func backoff(attempt: Int, first: Duration = .milliseconds(50), cap: Duration = .seconds(1)) -> Duration {
        let doubled = first * (1 << min(max(attempt - 1, 0), 20))
        let span = min(doubled, cap)
        return span / 2 + span / 2 * Double.random(in: 0...1)
    }
}

/// Which servers this process has seen go out and not yet come back, shared by every part that
/// talks to one (the appender, reads, subscriptions, `LISTEN`, the key vault): the first part to
/// see a crash, usually the `LISTEN` connection, tells the others, so that an operation sent
/// before it and one started after it are both given a short try, not the whole timeout.
package final class PostgresServers: Sendable {
    package static let shared = PostgresServers()

    private let down = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Whether an outage of `server` is under way (seen by any part of the process).
    package func isDown(_ server: String) -> Bool { down.withLock { $0[server] != nil } }

    /// Marks `server` as out; true when it was not already.
    func markDown(_ server: String) -> Bool {
        down.withLock { down in
            guard down[server] == nil else { return false }
            down[server] = .now
            return true
        }
    }

    /// Marks `server` as answering again, on the word of a try that started at `tryStarted`: a
    /// try that started before the outage was seen says nothing of the server now. True when it
    /// was out.
    func markUp(_ server: String, tryStarted: ContinuousClock.Instant) -> Bool {
        down.withLock { down in
            guard let since = down[server], since < tryStarted else { return false }
            down[server] = nil
            return true
        }
    }
}

/// One outage of the server as one thing seen from here: logged once when it begins (its first
/// failure) and once when it ends (the first success after it), with how long it lasted, instead
/// of a line for every failed try.
package final class PostgresOutage: Sendable {
    private struct State {
        var since: ContinuousClock.Instant?
        var failures = 0
        var lastError = ""
    }

    private let state = Mutex(State())
    private let what: String
    private let logger: Logger
    /// The server (``PostgresLogLocation/server``) whose operations under way get at most
    /// `inFlightLimit` more once an outage of it begins (see
    /// ``DeadlineWatch/shorten(owner:to:)``), and whose outages this one shares with the other
    /// parts of the process (``PostgresServers``); nil: none.
    private let server: String?
    private let inFlightLimit: Duration

    /// `what`: what is out, e.g. "the key vault at postgres://…". `server`: the server it talks
    /// to, whose operations sent before the outage was seen are given `inFlightLimit` more.
    package init(_ what: String, logger: Logger, server: String? = nil, inFlightLimit: Duration = PostgresTransience.inFlightLimit) {
        self.what = what
        self.logger = logger
        self.server = server
        self.inFlightLimit = inFlightLimit
    }

    /// Whether an outage is under way: seen here, or by another part of the process that talks to
    /// the same server.
    package var isOngoing: Bool {
        state.withLock { $0.since != nil } || server.map(PostgresServers.shared.isDown) ?? false
    }

    /// The failed tries of the outage under way (0 when there is none): the next try's backoff.
    var failures: Int { state.withLock { $0.failures } }

    /// A try failed with a transient error: the first failure of an outage is logged, and the
    /// first seen of the server in this process cuts its operations under way short.
    package func failed(_ error: any Error) {
        let first = state.withLock { state in
            state.failures += 1
            state.lastError = String(describing: error)
            guard state.since == nil else { return false }
            state.since = .now
            return true
        }
        if first {
            var moved = 0
            if let server, PostgresServers.shared.markDown(server) {
                moved = DeadlineWatch.shared.shorten(owner: server, to: .now + inFlightLimit)
            }
            logger.warning("\(what) cannot be reached; retrying", metadata: ["error": "\(error)", "requests cut short": "\(moved)"])
        }
    }

    /// A try that started at `tryStarted` succeeded: an outage under way ends, logged with its
    /// duration. `tryStarted` nil: the answer may not have come from the server just now (a batch
    /// read ahead), so it ends this part's outage but not the process's (``PostgresServers``).
    /// When it ends the process's, the operations started during the outage get at most
    /// `inFlightLimit` more: the server answers again, and a try still waiting for a connection the
    /// pool will not give soon is better given up and made again.
    package func succeeded(tryStarted: ContinuousClock.Instant?) {
        if let server, let tryStarted, PostgresServers.shared.markUp(server, tryStarted: tryStarted) {
            DeadlineWatch.shared.shorten(owner: server, to: .now + inFlightLimit)
        }
        let ended = state.withLock { state -> (Duration, Int, String)? in
            guard let since = state.since else { return nil }
            defer { state = State() }
            return (.now - since, state.failures, state.lastError)
        }
        if let (duration, failures, lastError) = ended {
            logger.warning(
                "\(what) is reachable again after an outage of \(Self.seconds(duration))",
                metadata: ["failures": "\(failures)", "last error": "\(lastError)"])
        }
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
