//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

/// How a program that ran to its end ended, and what it printed.
public struct ProgramRun: Sendable {
    public let status: Int32
    /// Its standard output (and its standard error, when they were merged).
    public let output: String
    /// Its standard error; empty when it was merged into `output`.
    public let errors: String
}

/// Runs `executable` to its end and returns what it printed, waiting off the cooperative pool
/// (``offThePool(_:)``). Its standard output and error are read at the same time, so a program
/// that fills one pipe while the other is being read does not wait forever. With
/// `errorsToOutput`, both go into one pipe, in the order they were written. It runs in
/// `directory` when one is given.
///
/// With a `timeLimit`, a program still running after it is killed (SIGKILL), so that a program
/// that hangs ends the test with its status instead of hanging it.
public func runProgram(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, errorsToOutput: Bool = false, in directory: URL? = nil,
    timeLimit: Duration? = nil
) async throws -> ProgramRun {
    try await offThePool {
        let process = ChildProcess()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        let errors = errorsToOutput ? output : Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        if let timeLimit {
            let seconds = Double(timeLimit.components.seconds) + Double(timeLimit.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
        }
        let errorText = Mutex("")
        let errorsRead = DispatchSemaphore(value: 0)
        if !errorsToOutput {
            Thread {
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                errorText.withLock { $0 = text }
                errorsRead.signal()
            }.start()
        }
        let outputText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        if !errorsToOutput { errorsRead.wait() }
        process.waitUntilExit()
        return ProgramRun(status: process.terminationStatus, output: outputText, errors: errorText.withLock { $0 })
    }
}
