//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Logging
import PostgresNIO

extension PostgresEventLog {
    static func configuration(_ location: PostgresLogLocation, options: PostgresLogOptions) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socket = location.unixSocketPath {
            configuration = PostgresClient.Configuration(
                unixSocketPath: socket, username: location.username, password: location.password,
                database: location.database)
        } else {
            let tls: PostgresClient.Configuration.TLS =
                location.disableTLS ? .disable : location.requireTLS ? .require(.makeClientConfiguration()) : .prefer(.makeClientConfiguration())
            configuration = PostgresClient.Configuration(
                host: location.host, port: location.port, username: location.username, password: location.password,
                database: location.database, tls: tls)
        }
        configuration.options.maximumConnections = options.maximumConnections
        configuration.options.connectTimeout = min(options.connectTimeout, options.operationTimeout)
        // The schema and the durability are settings of each connection, sent when it starts.
        configuration.options.additionalStartupParameters = [
            ("search_path", location.schema),
            ("synchronous_commit", options.durability == .durable ? "on" : "off"),
            ("application_name", "spezi-account-store")
        ]
        return configuration
    }

    /// Wakes subscribers on `NOTIFY` while any wait for a commit. It listens from the first wait
    /// and stops when nobody waited at three checks a second apart, so a process that only appends
    /// does not receive a notification for each of its own commits. Once `LISTEN` took effect it
    /// reads the head, for commits made just before. Reconnects after a lost connection (polling
    /// covers the gap) with capped exponential backoff and jitter; an outage is logged once when
    /// it begins and once, with its duration, when `LISTEN` took effect again.
    static func listen(
        _ client: PostgresClient, channel: String, notifier: CommitNotifier, logger: Logger, location: PostgresLogLocation
    ) async {
        // Usually the first to see a crash (its connection stays open): operations sent to the
        // server before it get a short deadline from then on.
        let outage = PostgresOutage("commit notifications of the log at \(location)", logger: logger, server: location.server)
        while !Task.isCancelled && !notifier.isClosed {
            await notifier.untilWaitedFor()
            if Task.isCancelled || notifier.isClosed { return }
            let tryStarted = ContinuousClock.now
            do {
                // True when it stopped because nobody waited (then it waits for the next one at once).
                let idle = try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        outage.succeeded(tryStarted: tryStarted)
                        do {
                            notifier.publish(
                                try await withDeadline(.seconds(5), doing: "read the head after LISTEN", on: client) {
                                    try await headPosition($0, logger: logger)
                                })
                        } catch {
                            // Notifications and polls still move subscribers on.
                            logger.debug("cannot read the head after LISTEN", metadata: ["error": "\(error)"])
                        }
                        return try await withThrowingTaskGroup(of: Bool.self) { group in
                            group.addTask {
                                for try await notification in notifications {
                                    if let position = UInt64(notification.payload) { notifier.publish(position) }
                                }
                                return false
                            }
                            group.addTask {
                                var idleChecks = 0
                                while idleChecks < 3 && !notifier.isClosed {
                                    try await Task.sleep(for: .seconds(1))
                                    idleChecks = notifier.hasWaiters ? 0 : idleChecks + 1
                                }
                                return true
                            }
                            defer { group.cancelAll() }
                            return try await group.next() ?? false
                        }
                    }
                }
                if idle { continue }
            } catch {
                if Task.isCancelled || notifier.isClosed { return }
                // Subscribers poll until notifications are back.
                outage.failed(error)
            }
            try? await Task.sleep(for: PostgresTransience.backoff(attempt: outage.failures, first: .milliseconds(100), cap: .seconds(2)))
        }
    }

    static func headPosition(_ connection: PostgresConnection, logger: Logger) async throws -> UInt64 {
        let rows = try await connection.query("SELECT position FROM log_head", logger: logger)
        for try await position in rows.decode(Int64.self) { return UInt64(position) }
        throw PostgresLogError.server("the log's head row is missing")
    }
}
