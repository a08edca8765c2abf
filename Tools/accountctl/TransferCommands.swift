//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import Foundation
import SpeziAccountStore

/// `accountctl export --jsonl`: the whole log as JSON Lines.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the whole log as JSON Lines (one record per line, payloads base64, chain hashes).",
        discussion: """
            The key vault is not in the export: copy the store's keys/vault beside it (or, for any store and the only way \
            for one on PostgreSQL, write a copy with --vault-copy) and pass it to import with --vault.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "JSON Lines output (the only format).")
    var jsonl = false

    @Option(help: "Write to this file instead of standard output.")
    var output: String?

    @Option(help: "Also write a copy of the store's key vault (a vault file, whatever the backend) to this new file.")
    var vaultCopy: String?

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let handle: FileHandle
                if let output {
                    guard FileManager.default.createFile(atPath: output, contents: nil) else { throw ToolError.input("cannot create \(output)") }
                    handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
                } else {
                    handle = FileHandle.standardOutput
                }
                let bar = output == nil ? nil : ProgressBar("exporting")
                let count = try await LogTransfer.export(store.log, to: handle) { done, total in bar?.update(done, of: total) }
                bar?.finish()
                if let vaultCopy {
                    guard let vault = store.accounts.vault else { throw ToolError.input("the store has no key vault (it is plain)") }
                    try vault.copy(to: vaultCopy)
                    FileHandle.standardError.write(Data("wrote a copy of key vault \(vault.id) to \(vaultCopy)\n".utf8))
                }
                if output != nil {
                    try handle.close()
                    print("exported \(count) records to \(output ?? "")")
                }
            }
        }
    }
}

/// `accountctl import FILE`: a new store from an export, with the same hash chain.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Build a new store from an export; every record's chain hash must match the exported one.",
        discussion: """
            The target folder must not exist or be empty. The store is built beside it and moved into place only when \
            every record checked out: a failed import leaves nothing behind. Pass the original store's keys/vault with \
            --vault; without it the new store gets a new vault, and an export with sealed payloads is refused. With \
            --log postgres://…, the log (which must be empty) and the vault go into PostgreSQL, built in a schema of \
            their own and renamed into place at the end, and the folder keeps this node's projections.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The JSON Lines file written by export.")
    var file: String?

    @Option(help: "A copy of the exported store's keys/vault.")
    var vault: String?

    @Option(
        help: ArgumentHelp(
            "Import the users of a Firebase Authentication export (firebase auth:export FILE --format=json) into the store, "
                + "new or not: UIDs become account ids, passwords are checked with Firebase's scrypt until each first sign-in.",
            valueName: "file"))
    var firebase: String?

    @Option(
        help: ArgumentHelp(
            "With --firebase: the project's password hash parameters, a JSON file with base64_signer_key, "
                + "base64_salt_separator, rounds and mem_cost (Firebase console → Authentication → Users → Password hash parameters).",
            valueName: "file"))
    var hashParameters: String?

    func validate() throws {
        switch (file, firebase) {
        case (nil, nil): throw ValidationError("name the export to import, or a Firebase export with --firebase")
        case (.some, .some): throw ValidationError("give either an export or --firebase, not both")
        default: break
        }
        if firebase == nil, hashParameters != nil { throw ValidationError("--hash-parameters goes with --firebase") }
        if firebase != nil, vault != nil { throw ValidationError("--vault goes with an export of this store, not with --firebase") }
    }

    /// The hash parameters in `file`, or a tool error naming it.
    static func firebaseParameters(file: String) throws -> FirebaseHashParameters {
        do {
            return try FirebaseHashParameters.read(from: URL(fileURLWithPath: file))
        } catch {
            throw ToolError.input("\(error)")
        }
    }

    func run() async throws {
        if let firebase {
            try await importFirebase(firebase)
            return
        }
        guard let file else { return }
        try await guarded {
            let input = URL(fileURLWithPath: file)
            guard FileManager.default.isReadableFile(atPath: input.path) else { throw ToolError.input("cannot read \(file)") }
            if let vault, !FileManager.default.isReadableFile(atPath: vault) { throw ToolError.input("cannot read \(vault)") }
            let target = global.location
            let bar = ProgressBar("importing")
            // Each record is one line: counting them first gives the bar its real total.
            let total = try ProgressBar.lineCount(of: input)
            let count = try await LogTransfer.importLog(
                from: input, into: target.path, logLocation: global.log, vault: vault.map { URL(fileURLWithPath: $0) }
            ) { done in
                bar.update(done, of: max(total, done))
            }
            bar.finish()
            // Opening the store builds its projections from the imported log.
            try await global.withStore(creating: false) { store in
                try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: try store.log.lastPosition())
                let report = try await store.log.verify()
                print("imported \(count) records into \(target.path); log \(report.isIntact ? "intact" : "DAMAGED"), head hash \(report.headHash)")
            }
        }
    }
}

extension Import {
    /// `accountctl import --firebase FILE`: Firebase's users into a new or existing store.
    func importFirebase(_ path: String) async throws {
        try await guarded {
            let parameters = try hashParameters.map(Self.firebaseParameters(file:))
            let users = try AccountStore.readFirebaseExport(from: URL(fileURLWithPath: path))
            if parameters == nil, users.contains(where: { !($0.passwordHash ?? "").isEmpty }) {
                throw ToolError.input("the export holds password hashes: give the project's --hash-parameters to keep them")
            }
            try await global.withStore(creating: true, adjusting: { $0.firebaseHashParameters = parameters }) { store in
                let bar = ProgressBar("importing Firebase users")
                let report = try await store.importFirebaseUsers(
                    users, parameters: parameters, context: AccountStore.Context(actor: "accountctl import --firebase")
                ) { done, total in
                    bar.update(UInt64(done), of: UInt64(total))
                }
                bar.finish()
                for (uid, reason) in report.skipped { print("skipped \(uid): \(reason)") }
                print(
                    "imported \(report.imported) of \(users.count) Firebase users into \(global.location.path); "
                        + "\(report.alreadyImported) were imported before, \(report.skipped.count) skipped")
                if parameters != nil {
                    print("serve with --firebase-hash-parameters \(hashParameters ?? "") so that their passwords are checked")
                }
            }
        }
    }
}

/// `accountctl backup DEST`: a consistent copy of the store while writers keep running.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the store (projections, log, key vault, in that order) into a new folder while writers run.",
        discussion: """
            DEST must not exist or be empty. The copy is checked (its log verifies and the original has the same \
            record at the copy's last position) before it is moved into place. Restore it with `accountctl restore`, \
            or open it as a store.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The folder to write the backup to.")
    var destination: String

    func run() async throws {
        try await guarded {
            let report = try await global.withStore(creating: false) { store in try await store.backup(to: destination) }
            print("backed up \(report.lastPosition) records to \(report.directory); head hash \(report.headHash)")
        }
    }
}

/// `accountctl restore BACKUP`: a backup made by `backup`, checked and moved into place.
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup into the store folder (which must not exist or be empty).",
        discussion: "The backup is copied beside the target, checked (the log verifies, the vault is the log's own) and moved into place."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The folder written by backup.")
    var backup: String

    func run() async throws {
        try await guarded {
            let report = try await AccountStore.restore(from: backup, to: global.location.path)
            print("restored \(report.lastPosition) records into \(report.directory); head hash \(report.headHash)")
        }
    }
}

/// `accountctl enable-shredding`: the migration of a store created without a key vault.
struct EnableShredding: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable-shredding",
        abstract: "Give a store created without crypto-shredding a key vault (a new store built from its log takes its place).",
        discussion: """
            No other process may have the store open. Records, positions and chain hashes stay as they are; user-id \
            claims are re-made as HMACs. Events written before the migration stay unsealed. The old folder is kept \
            beside the store, renamed: delete it once the new store checks out, as it holds every value in the clear.
            """
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await guarded {
            let root = global.location
            guard FileManager.default.fileExists(atPath: root.appendingPathComponent("log/data.mdb").path) else {
                throw ToolError.noStore(root.path)
            }
            let bar = ProgressBar("migrating")
            let kept = try await AccountStore.enableCryptoShredding(directory: root.path) { done, total in bar.update(done, of: max(total, 1)) }
            bar.finish()
            print("crypto-shredding is on for \(root.path); the store as it was is in \(kept): delete it once this one checks out")
        }
    }
}
