//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import Foundation
import SpeziAccountStore
import Testing

@Suite("Where a store's log lives")
struct LogLocationTests {
    init() { PostgresLogSupport.register() }

    let folder = URL(fileURLWithPath: "/var/lib/accounts")

    @Test("nil is the store's own log folder; paths and file URLs are LMDB folders; postgres URLs keep their password out of messages")
    func locations() throws {
        #expect(try LogLocation(nil, storeFolder: folder) == .folder("/var/lib/accounts/log"))
        #expect(try LogLocation("shared/log", storeFolder: folder) == .folder("/var/lib/accounts/shared/log"))
        #expect(try LogLocation("/srv/log", storeFolder: folder) == .folder("/srv/log"))
        #expect(try LogLocation("file:///srv/other", storeFolder: folder) == .folder("/srv/other"))
        let postgres = try LogLocation("postgres://app:secret@db/accounts", storeFolder: folder)
        #expect(postgres == .postgres(url: "postgres://app:secret@db/accounts"))
        #expect(postgres.description == "postgres://app@db/accounts")
    }

    @Test("a scheme without a backend is refused by name")
    func unknownScheme() {
        #expect(
            throws: AccountStoreError.unsupportedLogLocation("no log backend for \"mysql://\" (use a folder, a file:// URL or a postgres:// URL)")
        ) {
            try LogLocation("mysql://db/app", storeFolder: folder)
        }
    }

    @Test("URL schemes reach the backend registered for them; an unregistered one is refused by name")
    func registeredKinds() throws {
        let postgres = try SharedLogKinds.kind(for: "PostgreSQL://app@db/accounts")
        #expect(postgres.schemes == ["postgres", "postgresql"])
        #expect(throws: AccountStoreError.unsupportedLogLocation("no log backend is registered for \"redis://\"")) {
            try SharedLogKinds.kind(for: "redis://cache/0")
        }
    }
}
