//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import KeyVaultStorage
import Logging
import PostgresEventLog
import SpeziAccountStore

/// Lets `AccountStore` open logs at `postgres://` and `postgresql://` locations
/// (`AccountStoreOptions.logLocation`) and import into them.
///
/// The store itself knows only its embedded LMDB log, so that an app on one machine never links
/// PostgreSQL's client. A program that serves a shared log calls ``register()`` once at start-up,
/// before it opens a store, the way swift-log's backends are bootstrapped:
///
/// ```swift
/// import AccountStorePostgres
///
/// PostgresLogSupport.register()
/// var options = AccountStoreOptions()
/// options.logLocation = "postgres://app@db.internal/accounts"
/// let store = try await AccountStore(directory: "/var/lib/app-node-1", options: options)
/// ```
///
/// A program can also open the log itself (`PostgresEventLog.open(_:options:)`) and hand it to
/// `AccountStore(directory:log:service:values:options:)`; then nothing needs registering.
public enum PostgresLogSupport {
    /// Registers the PostgreSQL log for the `postgres` and `postgresql` schemes. Calling it again
    /// changes nothing.
    public static func register() {
        SharedLogKinds.register(PostgresLogKind())
    }
}

/// The PostgreSQL log as a `SharedLogKind`.
struct PostgresLogKind: SharedLogKind {
    private static let logger = Logger(label: "AccountStorePostgres")

    var schemes: [String] { ["postgres", "postgresql"] }

    func open(url: String, sync: Durability, clock: @escaping @Sendable () -> Date) async throws -> any EventLogBackend {
        var options = PostgresLogOptions()
        options.durability = sync
        options.clock = clock
        do {
            return try await PostgresEventLog.open(url, options: options)
        } catch let error as PostgresLogError {
            throw AccountStoreError.unsupportedLogLocation(error.description)
        }
    }

    /// The records go into a schema of their own, with the key vault, and that schema is renamed
    /// into place in one transaction once `fill` returned. A failure drops the staging schema.
    func importLog(
        url: String, vault vaultFile: URL?, fill: (any EventLogBackend, KeyVault) async throws -> UInt64
    ) async throws -> UInt64 {
        let target: PostgresLogLocation
        do {
            target = try PostgresLogLocation(url: url)
        } catch let error as PostgresLogError {
            throw AccountStoreError.unsupportedLogLocation(error.description)
        }
        if let held = try await PostgresEventLog.recordCount(at: target), held > 0 {
            throw LogTransferError.logNotEmpty(target.description, records: UInt64(held))
        }
        var staging = target
        let tag = String(format: "%08x", UInt32.random(in: 0...UInt32.max))
        staging.schema = String("import_\(tag)_\(target.schema)".prefix(40))
        var options = PostgresLogOptions()
        // The staging log's commits need not wait for the WAL: the rename's commit flushes them.
        options.durability = .relaxed
        do {
            let log = try await PostgresEventLog.open(staging, options: options)
            let count: UInt64
            do {
                let vault = try await KeyVault.seeded(copying: vaultFile) { [staging] header in
                    try PostgresVaultStorage(location: staging, create: header)
                }
                defer { vault.release() }
                count = try await fill(log, vault)
                await log.close()
            } catch {
                await log.close()
                throw error
            }
            try await PostgresEventLog.promote(staging, to: target)
            return count
        } catch {
            do {
                try await PostgresEventLog.dropSchema(staging)
            } catch let cleanup {
                Self.logger.error(
                    "an import into \(target) failed, and its staging schema \(staging.schema) could not be dropped (drop it by hand)",
                    metadata: ["error": "\(cleanup)"])
            }
            throw error
        }
    }
}
