//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import PostgresEventLog
import TestSupport
import TestTiers
import Testing

/// Opening a log that cannot be reached fails with the reason, not with a timeout: the deadline
/// here is a minute, so an error that names the deadline would mean the reason was lost.
@Suite("Opening a PostgreSQL log that cannot be reached says why", .integration)
struct OpenFailureTests {
    private static var patient: PostgresLogOptions {
        var options = PostgresLogOptions()
        options.operationTimeout = .seconds(60)
        return options
    }

    private static func message(opening url: String) async -> String? {
        do {
            let log = try await PostgresEventLog.open(url, options: patient)
            await log.close()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("no server on the port: the connection is refused, and the error says so")
    func noServer() async throws {
        let server = try await PostgresServer.start(name: "gone")
        let url = server.url(schema: "gone")
        try await server.stop(mode: "immediate")
        server.remove()
        let message = try #require(await Self.message(opening: url))
        #expect(message.contains("cannot connect to the log at postgres://postgres@127.0.0.1"), "\(message)")
        #expect(!message.contains("no answer from the server"), "\(message)")
    }

    @Test("a database that does not exist: the server's own words")
    func missingDatabase() async throws {
        let server = try await PostgresServer.start(name: "nodb")
        defer { server.remove() }
        let url = server.url(schema: "nodb").replacingOccurrences(of: "/postgres?", with: "/no_such_database?")
        let message = try #require(await Self.message(opening: url))
        #expect(message.contains("database \"no_such_database\" does not exist"), "\(message)")
        // The server itself is fine: the right database opens.
        let log = try await PostgresEventLog.open(server.url(schema: "nodb"), options: Self.patient)
        #expect(try await log.lastPosition() == 0)
        await log.close()
    }
}
