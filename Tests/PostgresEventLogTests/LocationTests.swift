//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import PostgresEventLog
import Testing

@Suite("PostgreSQL log locations")
struct LocationTests {
    @Test("a full URL: host, port, user, password, database, schema, TLS; the description never shows the password")
    func fullURL() throws {
        let location = try PostgresLogLocation(url: "postgresql://app:s3cr%40t@db.internal:6543/accounts?schema=node_log&sslmode=require")
        #expect(location.host == "db.internal" && location.port == 6543)
        #expect(location.username == "app" && location.password == "s3cr@t")
        #expect(location.database == "accounts" && location.schema == "node_log")
        #expect(location.requireTLS && !location.disableTLS)
        #expect(location.description == "postgres://app@db.internal:6543/accounts?schema=node_log")
        #expect(!location.description.contains("s3cr"))
    }

    @Test("defaults, and a Unix socket directory")
    func defaultsAndSocket() throws {
        let location = try PostgresLogLocation(url: "postgres://localhost/app?host=/run/postgresql")
        #expect(location.port == 5432 && location.username == "postgres" && location.password == nil)
        #expect(location.schema == PostgresLogLocation.defaultSchema)
        #expect(location.socketDirectory == "/run/postgresql")
    }

    @Test(
        "what cannot be used is refused with a message that says why",
        arguments: [
            ("mysql://db/app", "is not a postgres:// URL"),
            ("postgres://db", "names no database"),
            ("postgres://db/app?schema=Bad-Name", "must be 1–40 lower-case letters"),
            ("postgres://db/app?sslmode=verify-full", "sslmode verify-full is not supported"),
            ("postgres://user:pw@db", "postgres://user@db names no database")
        ])
    func refused(url: String, message: String) {
        do {
            _ = try PostgresLogLocation(url: url)
            Issue.record("\(url) was accepted")
        } catch let PostgresLogError.invalidLocation(text) {
            #expect(text.contains(message), "\(text)")
            #expect(!text.contains(":pw@"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
