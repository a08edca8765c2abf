//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import EventLogProtocol
import Foundation
import Projections
import SpeziAccount
import SpeziAccountStore

/// Errors of the tool itself.
enum ToolError: Error, CustomStringConvertible {
    case noStore(String)
    case input(String)

    var description: String {
        switch self {
        case let .noStore(path): "no store at \(path)"
        case let .input(message): message
        }
    }
}

/// Exit statuses (listed in the root command's discussion) and the one-line error report.
enum ToolExit {
    static let damagedLog: Int32 = 1
    static let usage: Int32 = 2
    static let store: Int32 = 3
    static let service: Int32 = 4
    static let operation: Int32 = 5
    static let eventLog: Int32 = 6
    static let keyVault: Int32 = 7
    static let tool: Int32 = 8
    static let other: Int32 = 9

    /// The exit status for an error.
    static func code(for error: any Error) -> Int32 {
        switch error {
        case is VerifyFailure: damagedLog
        case is AccountStoreError: store
        case is AccountServiceError: service
        case is AccountOperationError: operation
        case is EventLogError: eventLog
        case is KeyVaultError: keyVault
        case is ToolError, is LogTransferError: tool
        default: other
        }
    }

    /// Prints `accountctl: <message>` on standard error and returns the exit status.
    static func report(_ error: any Error) -> Int32 {
        printError(describe(error))
        return code(for: error)
    }

    /// One line describing the error.
    static func describe(_ error: any Error) -> String {
        String(describing: error).replacingOccurrences(of: "\n", with: " ")
    }
}

/// Prints one line on standard error, prefixed with the tool's name.
func printError(_ message: String) {
    FileHandle.standardError.write(Data("accountctl: \(message)\n".utf8))
}

/// Runs a command body: any error becomes one line on standard error and an `ExitCode`.
func guarded(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        throw ExitCode(ToolExit.report(error))
    }
}

extension GlobalOptions {
    /// The store's options: OWASP hashing, or weak hashing with `ACCOUNTCTL_INSECURE_FAST_HASHING=1`.
    static func storeOptions(environment: [String: String] = ProcessInfo.processInfo.environment) -> AccountStoreOptions {
        var options = AccountStoreOptions()
        if environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] == "1" {
            options.passwordParameters = ScryptParameters(logN: 4, blockSize: 1, parallelism: 1)
            options.allowWeakPasswordParameters = true
        }
        return options
    }

    /// Opens the store, runs `body` and closes the store. With `creating: false` a missing store
    /// is an error instead of being created.
    func withStore<T>(
        creating: Bool, adjusting adjust: (inout AccountStoreOptions) -> Void = { _ in }, _ body: (AccountStore) async throws -> T
    ) async throws -> T {
        let url = location
        if !creating && log == nil {
            let logFile = url.appendingPathComponent("log").appendingPathComponent("data.mdb").path
            guard FileManager.default.fileExists(atPath: logFile) else { throw ToolError.noStore(url.path) }
        }
        var options = Self.storeOptions()
        if let log {
            options.logLocation = log
        }
        adjust(&options)
        let store = try await AccountStore(directory: url.path, options: options)
        do {
            // Projections never built (a new node, a deleted projections folder) or behind a shared
            // log: brought up to date before the command reads them, so it answers on the first call.
            try await Self.catchUp(store)
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }
}

extension GlobalOptions {
    /// Waits until every projection has applied the log's head as it was at the call, showing
    /// progress when that takes more than half a second. At a projection that stopped (its runner
    /// logs why) or made no progress for 60 s, the command goes on with what the projections hold.
    static func catchUp(_ store: AccountStore) async throws {
        let head = try await store.log.lastPosition()
        let started = ContinuousClock.now
        var bar: ProgressBar?
        var lastProgress = (checkpoint: UInt64(0), at: ContinuousClock.now)
        while true {
            let statuses = try await store.projections.status()
            let lowest = statuses.map(\.checkpoint).min() ?? head
            if lowest >= head { break }
            if lowest > lastProgress.checkpoint { lastProgress = (lowest, .now) }
            if statuses.contains(where: { $0.failure != nil }) || ContinuousClock.now - lastProgress.at > .seconds(60) {
                bar?.finish()
                return
            }
            if bar == nil, ContinuousClock.now - started > .milliseconds(500) { bar = ProgressBar("building projections") }
            bar?.update(lowest, of: head)
            try await Task.sleep(for: .milliseconds(20))
        }
        bar?.finish()
    }
}

extension AccountStore {
    /// The account id for an account id, a user id, or the id of a deleted account's stream.
    func lookUp(_ accountOrUserId: String, includingDeleted: Bool = false) async throws -> String {
        if let accountId = try await resolve(accountOrUserId) {
            return accountId
        }
        if includingDeleted, (try? await log.streamVersion(accountOrUserId)) != nil {
            return accountOrUserId
        }
        throw AccountStoreError.accountNotFound(accountOrUserId)
    }
}

/// "Given Family" as name components: the last word is the family name.
func personName(_ text: String) -> PersonNameComponents {
    var words = text.split(separator: " ").map(String.init)
    var name = PersonNameComponents()
    if words.count > 1 {
        name.familyName = words.removeLast()
    }
    name.givenName = words.joined(separator: " ")
    return name
}

/// An ISO-8601 time with milliseconds.
func isoTime(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
}
