//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
internal import BlockingPool
import EventLogProtocol
import Foundation
import KeyVaultStorage
import Synchronization

/// A log backend reached by URL (`postgres://…`), registered at start-up by the module that
/// implements it, the way swift-log's backends are bootstrapped: the store itself knows only its
/// embedded LMDB log, so an app that never uses PostgreSQL never links its client.
/// `AccountStorePostgres` registers the `postgres` and `postgresql` schemes.
package protocol SharedLogKind: Sendable {
    /// The URL schemes this backend opens, lowercased, without `://`.
    var schemes: [String] { get }

    /// Opens the log at `url`.
    ///
    /// - Parameters:
    ///   - url: the location as the user gave it.
    ///   - sync: when an append counts as durable.
    ///   - clock: the clock that stamps new events.
    /// - Returns: the opened backend, owned by the caller.
    /// - Throws: ``AccountStoreError/unsupportedLogLocation(_:)`` for a URL this backend cannot
    ///   use, or the backend's errors when the log cannot be reached.
    func open(url: String, sync: Durability, clock: @escaping @Sendable () -> Date) async throws -> any EventLogBackend

    /// Builds a log at `url`, which must hold no records yet, from an import: opens a staging log
    /// beside the target, a key vault there (a copy of `vaultFile`, or a new one, made with
    /// ``KeyVault/seeded(copying:into:)``), lets `fill` append every record, and moves the staging
    /// log into place only when `fill` returned. A failure leaves the target as it was.
    ///
    /// - Returns: what `fill` returned (the number of records).
    func importLog(
        url: String, vault vaultFile: URL?, fill: (any EventLogBackend, KeyVault) async throws -> UInt64
    ) async throws -> UInt64
}

/// The backends registered for URL schemes.
package enum SharedLogKinds {
    private static let registered = Mutex<[String: any SharedLogKind]>([:])

    /// Registers `kind` for each of its schemes (a later registration of a scheme replaces the
    /// earlier one; registering the same kind again changes nothing).
    package static func register(_ kind: some SharedLogKind) {
        registered.withLock { kinds in
            for scheme in kind.schemes { kinds[scheme] = kind }
        }
    }

    /// The backend for `url`'s scheme.
    ///
    /// - Throws: ``AccountStoreError/unsupportedLogLocation(_:)`` naming what to register when
    ///   none is.
    package static func kind(for url: String) throws -> any SharedLogKind {
        let scheme = url.range(of: "://").map { url[..<$0.lowerBound].lowercased() } ?? ""
        if let kind = registered.withLock({ $0[scheme] }) { return kind }
        let hint =
            scheme.hasPrefix("postgres")
            ? "this program does not include the PostgreSQL log: link AccountStorePostgres and call "
                + "PostgresLogSupport.register() once at start-up"
            : "no log backend is registered for \"\(scheme)://\""
        throw AccountStoreError.unsupportedLogLocation(hint)
    }
}

extension KeyVault {
    /// The key vault of a log being imported into a shared backend: `make` creates its storage
    /// with a header (that of `vaultFile`, or a new one), and `vaultFile`'s slots are copied in.
    /// The file and database I/O runs on the vault's own thread.
    ///
    /// - Parameters:
    ///   - vaultFile: the vault file of the store being imported, or nil for a new vault.
    ///   - make: creates the new storage with the given header.
    /// - Returns: the opened vault.
    /// - Throws: ``KeyVaultError`` when `vaultFile` is not a vault, or what `make` throws.
    package static func seeded(
        copying vaultFile: URL?, into make: @escaping @Sendable ([UInt8]) throws -> any KeyVaultStorage
    ) async throws -> KeyVault {
        try await BlockingPool.vault.run {
            guard let vaultFile else { return try KeyVault(storage: make(VaultFile.newHeader())) }
            let source = try FileVaultStorage(path: vaultFile.path, create: false)
            defer { source.release() }
            let (header, slots) = try source.withLock(exclusive: false) { (try source.readHeader(), try source.readSlots(from: 0)) }
            _ = try VaultFile.parseHeader(header, path: vaultFile.path)
            let storage = try make(header)
            if !slots.isEmpty { try storage.withLock(exclusive: true) { try storage.writeSlots(slots, at: 0) } }
            return try KeyVault(storage: storage)
        }
    }
}
