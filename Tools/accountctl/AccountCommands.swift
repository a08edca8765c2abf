//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import Foundation
import SpeziAccount
import SpeziAccountStore

/// How a command gets a password.
struct PasswordOptions: ParsableArguments {
    @Flag(help: "Read the password from standard input (one line) instead of prompting.")
    var passwordStdin = false

    /// The password from standard input, or typed at a prompt without echo.
    func read(prompt: String = "Password: ") throws -> String {
        if passwordStdin {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            guard !text.isEmpty else { throw ToolError.input("no password on standard input") }
            return text
        }
        guard isatty(STDIN_FILENO) != 0, let typed = getpass(prompt) else {
            throw ToolError.input("no password: pass --password-stdin or run on a terminal")
        }
        let text = String(cString: typed)
        guard !text.isEmpty else { throw ToolError.input("no password given") }
        return text
    }
}

/// The context the account commands write into their events.
private let toolContext = AccountStore.Context(actor: "accountctl", correlationID: UUID().uuidString.lowercased())

/// `accountctl signup`.
struct Signup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "signup", abstract: "Create an account (creates the store when missing).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var password: PasswordOptions

    @Option(help: "The user id (an e-mail address).")
    var userId: String

    @Option(help: "The name: \"Given Family\" (the last word is the family name).")
    var name: String

    @Option(help: "The gender identity: \(GenderIdentity.allCases.map(\.rawValue).joined(separator: ", ")).")
    var genderIdentity: String?

    func run() async throws {
        try await guarded {
            var details = AccountDetails()
            details.userId = userId
            details.name = personName(name)
            if let genderIdentity { details.genderIdentity = try gender(genderIdentity) }
            details.password = try password.read()
            try await global.withStore(creating: true) { store in
                let created = try await store.signup(details, context: toolContext)
                print("signed up \(userId): account \(created.accountId)")
            }
        }
    }
}

/// `accountctl login`.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login", abstract: "Check a user id and password (recorded in the account's stream).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var password: PasswordOptions

    @Option(help: "The user id.")
    var userId: String

    @Option(help: ArgumentHelp("The Firebase project's hash parameters, for a user imported with import --firebase.", valueName: "file"))
    var firebaseHashParameters: String?

    func run() async throws {
        try await guarded {
            let secret = try password.read()
            let firebase = try firebaseHashParameters.map(Import.firebaseParameters(file:))
            try await global.withStore(creating: false, adjusting: { $0.firebaseHashParameters = firebase }) { store in
                let details = try await store.login(userId: userId, password: secret, context: toolContext)
                print("logged in: account \(details.accountId)")
            }
        }
    }
}

/// `accountctl modify <account>`.
struct Modify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "modify", abstract: "Change an account's name, gender identity or user id.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "An account id or a user id.")
    var account: String

    @Option(help: "The new name: \"Given Family\".")
    var name: String?

    @Option(help: "The new gender identity: \(GenderIdentity.allCases.map(\.rawValue).joined(separator: ", ")).")
    var genderIdentity: String?

    @Option(help: "The new user id.")
    var userId: String?

    func run() async throws {
        try await guarded {
            var change = AccountDetails()
            if let name { change.name = personName(name) }
            if let genderIdentity { change.genderIdentity = try gender(genderIdentity) }
            if let userId { change.userId = userId }
            guard !change.isEmpty else { throw ToolError.input("nothing to change: pass --name, --gender-identity or --user-id") }
            try await global.withStore(creating: false) { store in
                let accountId = try await store.lookUp(account)
                try await store.modify(accountId, AccountModifications(modifiedDetails: change), context: toolContext)
                print("modified account \(accountId)")
            }
        }
    }
}

/// `accountctl delete <account>`.
struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete an account and destroy its key (its events stay in the log, unreadable)."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "An account id or a user id.")
    var account: String

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: false) { store in
                let accountId = try await store.lookUp(account)
                try await store.delete(accountId, context: toolContext)
                print("deleted account \(accountId)")
            }
        }
    }
}

/// A gender identity from its raw value (case-insensitive).
func gender(_ text: String) throws -> GenderIdentity {
    guard let value = GenderIdentity.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else {
        throw ToolError.input("unknown gender identity \"\(text)\" (one of \(GenderIdentity.allCases.map(\.rawValue).joined(separator: ", ")))")
    }
    return value
}
