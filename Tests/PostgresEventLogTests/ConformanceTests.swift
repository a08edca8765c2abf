//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogConformance
import Foundation
import PostgresEventLog
import TestSupport
import Testing

/// One throwaway cluster for this suite's tests (each check gets its own schemas).
let sharedServer = Result { try PostgresServer(name: "conformance") }

@Suite("The log-backend conformance kit, run against PostgreSQL")
struct PostgresConformanceTests {
    @Test("the PostgreSQL log passes every check of the kit", arguments: LogConformance.checks)
    func postgresLog(check: String) async throws {
        let server = try sharedServer.get()
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
                _ = try server.psql(
                    "UPDATE \(schema).log_records SET payload = payload || '\\x01'::bytea WHERE position = \(position)")
            })
        let outcome = await kit.run(check)
        #expect(outcome.passed, "\(outcome)")
    }
}
