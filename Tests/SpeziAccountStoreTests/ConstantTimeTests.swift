//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// Constant time with respect to the stored hash, checked by counting instructions (valgrind's
/// callgrind), which unlike a stopwatch gives the same figure on every run on a busy machine.
@Suite("Secrets: password checks take constant time with respect to the stored hash", .integration)
struct ConstantTimeTests {
    struct ToolError: Error, CustomStringConvertible {
        let description: String
    }

    /// A copy of the built `timing-check` without its debug information, which valgrind 3.19 can't
    /// read (the symbol table, which names the functions, stays).
    static let subject: Result<String, ToolError> = {
        let built = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("timing-check").path
        // Beside the built program (replaced by each run), so that no run leaves a copy behind.
        let copy = built + ".stripped"
        let strip = ChildProcess()
        strip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let written = copy + ".\(getpid())"
        strip.arguments = ["objcopy", "--strip-debug", built, written]
        guard (try? strip.run()) != nil else { return .failure(ToolError(description: "objcopy did not start")) }
        strip.waitUntilExit()
        guard strip.terminationStatus == 0 else { return .failure(ToolError(description: "objcopy failed on \(built)")) }
        guard rename(written, copy) == 0 else { return .failure(ToolError(description: "cannot rename \(written) to \(copy)")) }
        return .success(copy)
    }()

    /// The instructions executed inside functions whose name contains `function`, in one run of
    /// `timing-check mode`.
    private func instructions(_ mode: String, inside function: String) async throws -> Int {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("callgrind-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        // The first read makes the copy (objcopy): off the cooperative pool.
        let subject = try await offThePool { try Self.subject.get() }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "valgrind", "--tool=callgrind", "--callgrind-out-file=\(output.path)", "--toggle-collect=*\(function)*",
            subject, mode, "40"
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_DETERMINISTIC_HASHING": "1"]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // valgrind takes seconds: the wait happens off the cooperative pool.
        try await offThePool {
            try process.run()
            process.waitUntilExit()
        }
        try #require(process.terminationStatus == 0, "valgrind (Debian's valgrind package) runs timing-check \(mode)")
        let text = try String(contentsOf: output, encoding: .utf8)
        let summary = try #require(text.split(separator: "\n").first { $0.hasPrefix("summary:") || $0.hasPrefix("totals:") })
        return try #require(Int(summary.split(separator: " ")[1]))
    }

    @Test(
        "the key comparison runs the same instructions whether the stored key matches, differs first or differs last; an early-exit comparison does not"
    )
    func sameInstructions() async throws {
        let equal = try await instructions("equal", inside: "constantTimeEquals")
        let first = try await instructions("first", inside: "constantTimeEquals")
        let last = try await instructions("last", inside: "constantTimeEquals")
        print("constant-time compare, instructions over 40 checks: equal \(equal), first byte differs \(first), last byte differs \(last)")
        #expect(equal > 0)
        #expect(first == equal && last == equal)
        // The control: the method sees the difference an early exit makes.
        let earlyFirst = try await instructions("early-first", inside: "earlyExitEquals")
        let earlyLast = try await instructions("early-last", inside: "earlyExitEquals")
        print("early-exit control: first byte differs \(earlyFirst), last byte differs \(earlyLast)")
        #expect(earlyLast > earlyFirst)
    }
}
