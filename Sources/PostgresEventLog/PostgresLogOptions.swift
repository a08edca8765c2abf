//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// Options for a ``PostgresEventLog``.
public struct PostgresLogOptions: Sendable {
    /// `.durable`: the server flushes its WAL before a commit is acknowledged
    /// (`synchronous_commit = on`). The other modes set `synchronous_commit = off`: a crash of the
    /// server may lose the last commits it acknowledged (up to about three times its
    /// `wal_writer_delay`), never corrupt the log.
    public var durability: Durability = .durable
    /// The clock that stamps new events.
    public var clock: @Sendable () -> Date = { Date() }
    /// How often a waiting subscriber looks at the head when no notification arrived (notifications
    /// are only a wake-up: PostgreSQL may drop them, and a lost connection loses them).
    public var pollInterval: Duration = .milliseconds(200)
    /// How long one operation may wait for the server (a connection, a query, a commit) before it
    /// fails with a clear error (opening, which may create the tables, waits at least 30 s).
    public var operationTimeout: Duration = .seconds(15)
    /// How long one connection attempt may take (TCP, TLS, start-up and login) before the pool
    /// gives it up and tries again. Short on purpose: while a connection attempt stalls (a server
    /// going down or coming up may take the TCP connection and not answer), the pool opens no other
    /// and every operation waits for it; an attempt given up is followed by the next within the
    /// pool's backoff.
    public var connectTimeout: Duration = .seconds(2)
    /// The most connections to the server.
    public var maximumConnections = 8
    /// The largest payload, as on the LMDB log.
    public var maxPayloadBytes = 16 << 20

    /// Creates the default value.
    public init() {}
}
