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
        discussion: "The key vault is not exported: copy the store's keys/vault beside the export and pass it to import with --vault."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "JSON Lines output (the only format).")
    var jsonl = false

    @Option(help: "Write to this file instead of standard output.")
    var output: String?

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
                let count = try LogTransfer.export(store.log, to: handle) { done, total in bar?.update(done, of: total) }
                bar?.finish()
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
        discussion: "The target store must not hold a log yet. Pass the original store's keys/vault with --vault, or sealed details read as redacted."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The JSON Lines file written by export.")
    var file: String

    @Option(help: "A copy of the exported store's keys/vault.")
    var vault: String?

    func run() async throws {
        try await guarded {
            let input = URL(fileURLWithPath: file)
            guard FileManager.default.isReadableFile(atPath: input.path) else { throw ToolError.input("cannot read \(file)") }
            if let vault, !FileManager.default.isReadableFile(atPath: vault) { throw ToolError.input("cannot read \(vault)") }
            let target = global.location
            let bar = ProgressBar("importing")
            let count = try await LogTransfer.importLog(from: input, into: target.path, vault: vault.map { URL(fileURLWithPath: $0) }) { done in
                bar.update(done, of: max(done, 1))
            }
            bar.finish()
            // Opening the store builds its projections from the imported log.
            try await global.withStore(creating: false) { store in
                try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: try store.log.lastPosition())
                let report = try store.log.verify()
                print("imported \(count) records into \(target.path); log \(report.isIntact ? "intact" : "DAMAGED"), head hash \(report.headHash)")
            }
        }
    }
}
