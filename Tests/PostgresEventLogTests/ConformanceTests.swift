//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogConformance
import Foundation
import PostgresEventLog
import TestSupport
import TestTiers
import Testing

/// One throwaway cluster for this suite's tests (each check gets its own schemas), started by
/// the first check that asks for it.
actor SharedConformanceServer {
    static let shared = SharedConformanceServer()
    private var starting: Task<PostgresServer, any Error>?

    func server() async throws -> PostgresServer {
        if let starting { return try await starting.value }
        let task = Task { try await PostgresServer.start(name: "conformance") }
        starting = task
        return try await task.value
    }
}

@Suite("The log-backend conformance kit, run against PostgreSQL", .integration)
struct PostgresConformanceTests {
    @Test("the PostgreSQL log passes every check of the kit", arguments: LogConformance.checks)
    func postgresLog(check: String) async throws {
        let server = try await SharedConformanceServer.shared.server()
        let prefix = "c" + String(UUID().uuidString.prefix(8)).lowercased() + "_"
        let options = {
            var options = PostgresLogOptions()
            options.pollInterval = .milliseconds(50)
            return options
        }()
        let kit = LogConformance(
            open: { name in
                let schema = prefix + name.lowercased().filter { $0.isLetter || $0.isNumber }
                return try await PostgresEventLog.open(server.url(schema: schema), options: options)
            },
            tamper: { name, position in
                let schema = prefix + name.lowercased().filter { $0.isLetter || $0.isNumber }
                // Add a byte to one payload and leave the stored checksum and hash as they were.
                _ = try await server.psql(
                    "UPDATE \(schema).log_records SET payload = payload || '\\x01'::bytea WHERE position = \(position)")
            })
        let outcome = await kit.run(check)
        #expect(outcome.passed, "\(outcome)")
    }
}
