//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import ArgumentParser
import Foundation

/// `accountctl`: a demo, audit histories, verification, statistics and account commands on an
/// account store.
@main
struct AccountCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accountctl",
        abstract: "Inspect and operate an event-sourced account store.",
        discussion: """
            The store is the folder given with --store, else $ACCOUNTCTL_STORE, else \
            $XDG_DATA_HOME/spezi-account-store, else ~/.local/share/spezi-account-store. Only demo and \
            signup create a missing store; the other commands report "no store at PATH".

            ACCOUNTCTL_INSECURE_FAST_HASHING=1 hashes new passwords with weak scrypt parameters \
            (tests and demos only); the default is Argon2id at OWASP's first choice.

            Errors are printed as one line on standard error ("accountctl: <message>"). Exit status:
              0  success
              1  verify found a damaged log (the position is printed)
              2  invalid command line
              3  account store error (no such account, locked out, value too large …)
              4  account service error (wrong credentials, user id taken)
              5  invalid account details (missing or invalid values)
              6  event log error (corrupt or foreign log, disk full …)
              7  key vault error
              8  no store at the path, or unusable input (e.g. no password given)
              9  any other error
            """,
        subcommands: [
            Demo.self, History.self, Verify.self, Stats.self, Show.self, Rebuild.self, Log.self,
            Signup.self, Login.self, Modify.self, Delete.self, Export.self, Import.self, Backup.self, Restore.self,
            EnableShredding.self, Serve.self, UserIds.self
        ]
    )

    /// Parses the command line and runs the command; parse errors become one line on standard error.
    /// (The commands' bodies report their own errors and throw `ExitCode`; what else reaches here
    /// comes from the parser: help, usage errors.)
    static func main() async {
        // `--log postgres://…` and ACCOUNTCTL_LOG reach a shared log through this module.
        PostgresLogSupport.register()
        do {
            var arguments = Array(CommandLine.arguments.dropFirst())
            if arguments.first == "serve", !arguments.contains("--help"), !arguments.contains("-h"),
                !arguments.contains("--experimental-dump-help")
            {
                // The environment and `--config` become arguments of `serve` (ServeSettings).
                let resolved = try ServeSettings.resolve(Array(arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
                arguments = ["serve"] + resolved.arguments
                if resolved.arguments.contains("--check-config") {
                    _ = try parseAsRoot(arguments)  // every value checked as for a real start
                    print(ServeSettings.describe(resolved.settings))
                    return
                }
            }
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch {
            if exitCode(for: error) == .success {
                print(fullMessage(for: error))
                return
            }
            let message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "invalid command line"
            let trimmed = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            FileHandle.standardError.write(Data("accountctl: \(trimmed) (see accountctl --help)\n".utf8))
            Foundation.exit(ToolExit.usage)
        }
    }
}

/// The options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The store folder (default: see accountctl --help).")
    var store: String?

    @Option(
        name: .long,
        help: "A shared log: postgres://user@host:port/database?schema=name (the store folder then keeps this node's projections).")
    var log: String?

    /// The store folder these options name.
    var location: URL { StoreLocation.resolve(store) }

    /// A URL given as the store folder is refused: the shared log goes to --log.
    func validate() throws {
        if let store, store.contains("://") {
            throw ValidationError(
                "--store takes a folder (this node's projections and keys); give a PostgreSQL log with --log \(store) --store FOLDER")
        }
    }
}
