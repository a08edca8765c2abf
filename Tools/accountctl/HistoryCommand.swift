//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import Foundation
import SpeziAccountStore

/// `accountctl history <account>`: an account's stream, oldest first, with what each event changed.
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print an account's events, oldest first, with the keys each one changed.",
        discussion: "Events of a deleted account cannot be read any more (crypto-shredding): they print as (redacted)."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "An account id or a user id (the account id of a deleted account).")
    var account: String

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let accountId = try await store.lookUp(account, includingDeleted: true)
                // Printed as the stream is walked: a long history is never held whole.
                print("history of account \(accountId)")
                try await store.forEachHistoryEntry(of: accountId) { entry in
                    print(HistoryPrinter.lines(for: entry).joined(separator: "\n"))
                }
            }
        }
    }
}

/// Formats an account's history.
enum HistoryPrinter {
    /// The heading and one block per event.
    static func lines(of accountId: String, in store: AccountStore) async throws -> [String] {
        var lines = ["history of account \(accountId)"]
        for entry in try await store.history(of: accountId) {
            lines.append(contentsOf: self.lines(for: entry))
        }
        return lines
    }

    /// One event: `time  #position  type  by actor`, then one line per changed key.
    static func lines(for entry: AccountHistoryEntry) -> [String] {
        var heading = "\(isoTime(entry.timestamp))  #\(entry.position)  \(entry.type)"
        if let actor = entry.actor { heading += "  by \(actor)" }
        if entry.isRedacted {
            heading += "  (redacted)"
        } else if let note = entry.note {
            heading += "  (\(note))"
        }
        var lines = [heading]
        for change in entry.changes {
            lines.append("    \(change.key): \(change.old ?? "(none)") → \(change.new ?? "(none)")")
        }
        return lines
    }
}
