//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import EventLogProtocol
import Foundation
import SpeziAccount
import SpeziAccountStore

/// `accountctl verify`: checksums, hash chain, positions and indexes of the whole log, read-only:
/// it never writes (no projections, no index flush, no upgrade), so an auditor can run it beside a
/// server or on a copy.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the log's checksums, hash chain, positions and indexes, read-only (exit 1 at the first problem)."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await guarded {
            let url = global.location
            if global.log == nil {
                guard FileManager.default.fileExists(atPath: url.appendingPathComponent("log/data.mdb").path) else {
                    throw ToolError.noStore(url.path)
                }
            }
            let bar = ProgressBar("verifying")
            let report = try await AccountStore.verifyLog(directory: url.path, logLocation: global.log) { progress in
                bar.update(progress.checked, of: progress.total)
            }
            bar.finish()
            if let problem = report.problem {
                throw VerifyFailure(problem: problem)
            }
            print("intact: \(report.recordsChecked) records, last position \(report.lastPosition), head hash \(report.headHash)")
        }
    }
}

/// `accountctl user-ids`: accounts whose user ids the current rule would not have let in, or that
/// collide once normalized (warnings, not damage; this opens the store and its projections).
struct UserIds: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user-ids", abstract: "List accounts whose user ids collide or that the current user-id rule would refuse.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let findings = try await store.userIdFindings()
                for finding in findings { print("warning: \(finding)") }
                print("\(findings.count) user-id finding(s)")
            }
        }
    }
}

/// `accountctl stats`: counts, sizes and the projections' progress.
struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Print counts, sizes and each projection's checkpoint and lag.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let statistics = try await store.log.statistics()
                var live = 0
                var deleted = 0
                try store.forEachCachedAccount { state in
                    if state.isDeleted { deleted += 1 } else { live += 1 }
                }
                print("store:          \(store.directory)")
                print("log:            \(store.log.location)")
                print("records:        \(statistics.records)")
                print("last position:  \(statistics.lastPosition)")
                print(
                    "log file:       \(ByteCountFormatter.string(fromByteCount: Int64(statistics.fileBytes), countStyle: .file)) (\(statistics.fileBytes) bytes)"
                )
                print("accounts:       \(live) (and \(deleted) deleted)")
                print(
                    "keys:           \(store.accounts.vault.map { "user-id claims keyed by vault \($0.id)" } ?? "plain user-id claims, no key vault")"
                )
                for status in try await store.projections.status() {
                    var line = "projection \(status.name): checkpoint \(status.checkpoint), lag \(status.lag), generation \(status.generation)"
                    if let rebuilding = status.rebuilding { line += ", rebuilding at \(rebuilding.checkpoint)" }
                    if let failure = status.failure { line += ", failed: \(failure)" }
                    if let storageError = status.storageError { line += ", cannot write (retrying): \(storageError)" }
                    print(line)
                }
            }
        }
    }
}

/// `accountctl show <account>`: the account's details from the cache, grouped by category.
struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Print an account's details, grouped by category.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "An account id or a user id.")
    var account: String

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let accountId = try await store.lookUp(account)
                guard let details = try store.details(of: accountId), let state = try store.cachedState(of: accountId) else {
                    throw AccountStoreError.accountNotFound(account)
                }
                print(Self.lines(details, state: state).joined(separator: "\n"))
            }
        }
    }

    static func lines(_ details: AccountDetails, state: AccountState) -> [String] {
        var lines = [
            "account \(state.accountId)",
            "  created \(isoTime(state.createdAt)), updated \(isoTime(state.updatedAt)), version \(state.version)"
        ]
        if state.isAnonymous { lines.append("  anonymous") }
        let encoded = (try? details.encodedPerKey()) ?? [:]
        var groups: [AccountKeyCategory: [(name: String, text: String)]] = [:]
        var order: [AccountKeyCategory] = []
        for key in details.keys where key.identifier != AccountDetails.__Key_password.identifier {
            let text =
                encoded[key.identifier].map { String(decoding: $0, as: UTF8.self) }
                ?? details.value(for: key).map { String(describing: $0) } ?? "(none)"
            if groups[key.category] == nil { order.append(key.category) }
            groups[key.category, default: []].append((key.name, text))
        }
        for category in order {
            lines.append(category.title ?? category.id.prefix(1).uppercased() + category.id.dropFirst())
            for entry in groups[category, default: []].sorted(by: { $0.name < $1.name }) {
                lines.append("  \(entry.name): \(entry.text)")
            }
        }
        if !details.unknownValues.isEmpty {
            lines.append("Unknown keys")
            for identifier in details.unknownValues.keys.sorted() {
                let text =
                    encoded[identifier].map { String(decoding: $0, as: UTF8.self) } ?? "\(details.unknownValues[identifier].map { "\($0)" } ?? "")"
                lines.append("  \(identifier): \(text)")
            }
        }
        return lines
    }
}

/// `accountctl rebuild [--projection NAME]`: blue/green rebuilds from position 0.
struct Rebuild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Rebuild projections from the log (all of them, or the one named).",
        discussion: "The live generation keeps serving reads until the new one has caught up."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "The projection to rebuild (see stats; default: all).")
    var projection: String?

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let names = try await store.projections.status().map(\.name)
                let chosen = projection.map { [$0] } ?? names
                if let unknown = chosen.first(where: { !names.contains($0) }) {
                    throw ToolError.input("no projection \"\(unknown)\" (known: \(names.joined(separator: ", ")))")
                }
                for name in chosen {
                    let bar = ProgressBar("rebuilding \(name)")
                    try await store.projections.rebuild(name) { done, total in bar.update(done, of: total) }
                    bar.finish()
                    print("rebuilt \(name)")
                }
            }
        }
    }
}
