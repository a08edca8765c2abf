//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
internal import BlockingPool
import EventLogProtocol
import Foundation
import KeyVaultStorage
import Logging

/// How a store keys its user-id claims, and so which key vault belongs to it. Recorded in the log's
/// metadata when the store is created (`app:account-store/keying`), checked at every open.
public enum StoreKeying: Sendable, Equatable, CustomStringConvertible {
    /// No vault: claims hold the normalized user id, payloads are not sealed.
    case plain
    /// Claims are HMACs under the claim secret of the vault with this id and fingerprint, and
    /// personal data is sealed with that vault's per-account keys.
    case keyed(vaultID: String, fingerprint: String)

    static let metadataName = "account-store/keying"

    /// The text stored in the log (readable in `mdb_dump` output).
    var encoded: [UInt8] {
        switch self {
        case .plain: Array("plain".utf8)
        case let .keyed(id, fingerprint): Array("keyed vault=\(id) fingerprint=\(fingerprint)".utf8)
        }
    }

    init?(encoded bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if text == "plain" {
            self = .plain
            return
        }
        let words = text.split(separator: " ")
        guard words.count == 3, words[0] == "keyed", words[1].hasPrefix("vault="), words[2].hasPrefix("fingerprint=") else { return nil }
        self = .keyed(vaultID: String(words[1].dropFirst(6)), fingerprint: String(words[2].dropFirst(12)))
    }

    init(_ vault: KeyVault) {
        self = .keyed(vaultID: vault.id, fingerprint: vault.fingerprint)
    }

    /// A one-line description.
    public var description: String {
        switch self {
        case .plain: "plain user-id claims, no key vault"
        case let .keyed(id, _): "user-id claims keyed by vault \(id)"
        }
    }
}

/// Decides, at open, which key vault a store's log goes with, and refuses every combination that
/// would make accounts unreadable or let a user id be taken twice.
enum StoreKeyingCheck {
    static let logger = Logger(label: "SpeziAccountStore.keys")

    /// Opens the vault that belongs to `log` (nil for a plain store), recording the keying of a new
    /// store. `wantsVault` says what a new store gets.
    static func openVault(for log: any EventLogBackend, vaultPath: String, wantsVault: Bool) async throws -> KeyVault? {
        let place = VaultPlace(log: log, vaultPath: vaultPath)
        let vaultExists = try await place.exists()
        if let recorded = try await recorded(in: log) {
            return try await open(recorded, log: log, place: place, vaultExists: vaultExists)
        }
        // No record: a new store, or one written before the keying was recorded.
        let vault: KeyVault?
        if try await log.lastPosition() == 0 {
            if vaultExists && !wantsVault {
                throw AccountStoreError.keyMismatch(
                    "\(place) exists, but the store is being created without crypto-shredding: move the vault away or turn shredding on")
            }
            vault = wantsVault ? try await place.open(create: true) : nil
        } else {
            vault = try await vaultOfOlderStore(log, place: place, vaultExists: vaultExists)
            if let vault {
                logger.notice("recording the key setting of an older store", metadata: ["log": "\(log.location)", "vault": "\(vault.id)"])
            }
        }
        let proposed = vault.map(StoreKeying.init) ?? .plain
        // Another process may have recorded its choice first: then follow that one.
        let stored = try await log.setMetadataIfAbsent(StoreKeying.metadataName, proposed.encoded)
        guard let recorded = StoreKeying(encoded: stored) else {
            throw AccountStoreError.keyMismatch("the log at \(log.location) records an unreadable key setting")
        }
        if recorded == proposed { return vault }
        return try await open(recorded, log: log, place: place, vaultExists: try await place.exists())
    }

    /// The vault that belongs to a log that is only read (a backup being restored): what the log
    /// records, or for an older log what it looks like; nothing is created or recorded.
    static func checkRecorded(log: any EventLogBackend, vaultPath: String) async throws -> KeyVault? {
        let place = VaultPlace.file(vaultPath)
        let vaultExists = try await place.exists()
        if let recorded = try await recorded(in: log) {
            return try await open(recorded, log: log, place: place, vaultExists: vaultExists)
        }
        return try await vaultOfOlderStore(log, place: place, vaultExists: vaultExists)
    }

    /// The keying the log records, nil when it records none; an unreadable record is an error.
    private static func recorded(in log: any EventLogBackend) async throws -> StoreKeying? {
        guard let bytes = try await log.metadata(StoreKeying.metadataName) else { return nil }
        guard let recorded = StoreKeying(encoded: bytes) else {
            throw AccountStoreError.keyMismatch(
                "the log at \(log.location) records a key setting this version cannot read (\(String(decoding: bytes, as: UTF8.self)))")
        }
        return recorded
    }

    /// For a log with records written before the keying was recorded: its own vault (checked
    /// against a claim), nil when it was written without one; a missing vault is an error.
    private static func vaultOfOlderStore(_ log: any EventLogBackend, place: VaultPlace, vaultExists: Bool) async throws -> KeyVault? {
        if vaultExists {
            let vault = try await place.open(create: false)
            try await checkClaimsMatch(log: log, vault: vault, place: place)
            return vault
        }
        if try await looksKeyed(log) {
            throw AccountStoreError.keyMismatch(
                "the log at \(log.location) holds user-id claims or payloads made with a key vault, but \(place) is missing: "
                    + "\(place.restoreHint) (a new vault would make every account unreadable and every user id free again)")
        }
        return nil
    }

    private static func open(_ recorded: StoreKeying, log: any EventLogBackend, place: VaultPlace, vaultExists: Bool) async throws -> KeyVault? {
        switch recorded {
        case .plain:
            if vaultExists {
                throw AccountStoreError.keyMismatch(
                    "the log at \(log.location) was written without a key vault (plain user-id claims), but \(place) exists: "
                        + "move it away, or turn crypto-shredding on with `accountctl enable-shredding` (see the README)")
            }
            return nil
        case let .keyed(id, fingerprint):
            guard vaultExists else {
                throw AccountStoreError.keyMismatch(
                    "the log at \(log.location) was written with key vault \(id), but \(place) is missing: \(place.restoreHint) "
                        + "(never create a new one: every account would become unreadable and every user id free to take again)")
            }
            let vault = try await place.open(create: false)
            guard vault.id == id, vault.fingerprint == fingerprint else {
                throw AccountStoreError.keyMismatch(
                    "\(place) is key vault \(vault.id), but the log at \(log.location) was written with vault \(id): "
                        + place.putBackHint)
            }
            return vault
        }
    }

    /// Keyed claims are `userid:` and 64 hex digits; sealed payloads start with 0x02. Stores written
    /// before the keying was recorded are LMDB stores; their claims are listed there
    /// (``ClaimListing``).
    private static func looksKeyed(_ log: any EventLogBackend) async throws -> Bool {
        let claims = try (log as? any ClaimListing)?.claims(withPrefix: "userid:", limit: 100) ?? []
        if !claims.isEmpty { return claims.allSatisfy { isKeyedClaim($0.claim) } }
        var next: UInt64 = 1
        while true {
            let batch = try await log.read(from: next, direction: .forward, limit: 1_024)
            guard let last = batch.last else { return false }
            if batch.contains(where: { $0.payload.first == Sealing.version }) { return true }
            next = last.position + 1
        }
    }

    static func isKeyedClaim(_ claim: String) -> Bool {
        let digits = claim.utf8.dropFirst("userid:".utf8.count)
        return digits.count == 64 && digits.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// An older keyed store and a vault that is not its own: a claim of the log must be the HMAC
    /// of its owner's user id under this vault's secret.
    private static func checkClaimsMatch(log: any EventLogBackend, vault: KeyVault, place: VaultPlace) async throws {
        guard let (claim, owner) = try (log as? any ClaimListing)?.claims(withPrefix: "userid:", limit: 1).first else { return }
        let accounts = AccountLog(log: log, vault: vault)
        let userId = try await accounts.load(owner)?.userId ?? ""
        guard !userId.isEmpty, accounts.claims(forUserId: userId).contains(claim) else {
            throw AccountStoreError.keyMismatch(
                "\(place) (vault \(vault.id)) does not open the accounts of the log at \(log.location): \(place.putBackHint)")
        }
    }
}

/// Where a store's key vault is: a file in the store's folder, or beside the log in a backend
/// that hosts it (``KeyVaultHosting``: PostgreSQL's tables, which every app server on that log
/// shares).
enum VaultPlace: CustomStringConvertible {
    case file(String)
    case hosted(any KeyVaultHosting)

    /// The place of the vault that goes with `log`: hosted by it, or `vaultPath`.
    init(log: any EventLogBackend, vaultPath: String) {
        if let host = log as? any KeyVaultHosting {
            self = .hosted(host)
        } else {
            self = .file(vaultPath)
        }
    }

    var description: String {
        switch self {
        case let .file(path): path
        case let .hosted(host): host.hostedVaultDescription
        }
    }

    /// What to do when the vault is missing.
    var restoreHint: String {
        switch self {
        case .file: "restore keys/vault from a backup"
        case let .hosted(host): host.hostedVaultRestoreHint
        }
    }

    /// What to do when the vault is not the log's own.
    var putBackHint: String {
        switch self {
        case .file: "put the store's own keys/vault back"
        case let .hosted(host): host.hostedVaultPutBackHint
        }
    }

    /// Whether the vault is there (nothing is created).
    func exists() async throws -> Bool {
        switch self {
        case let .file(path): return FileManager.default.fileExists(atPath: path)
        case let .hosted(host):
            do {
                return try await BlockingPool.vault.run { try host.hostedVaultExists() }
            } catch let error as KeyVaultHostingError {
                throw AccountStoreError.keyMismatch(error.description)
            }
        }
    }

    /// Opens the vault (creating it when `create` is true) on the vault's own thread: it reads
    /// and flushes files, or waits for the database.
    func open(create: Bool) async throws -> KeyVault {
        switch self {
        case let .file(path):
            return try await BlockingPool.vault.run { try KeyVault(path: path, create: create) }
        case let .hosted(host):
            do {
                return try await BlockingPool.vault.run {
                    try KeyVault(storage: host.hostedVaultStorage(create: create ? VaultFile.newHeader() : nil))
                }
            } catch let error as KeyVaultHostingError {
                throw AccountStoreError.keyMismatch(error.description)
            }
        }
    }
}
