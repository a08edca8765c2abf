//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

/// The console's resource files pass `Tests/Browser/check_web_assets.py` (html.parser, a CSS
/// structure check, `node --check`), and the checker fails on each kind of breakage.
@Suite("The console's web assets are checked", .integration)
struct WebAssetCheckTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let console = root.appendingPathComponent("Sources/AccountServer/Console")

    static func check(_ directory: URL) async throws -> ProgramRun {
        try await runProgram(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", root.appendingPathComponent("Tests/Browser/check_web_assets.py").path, directory.path], errorsToOutput: true)
    }

    @Test("the shipped console.html, console.css and console.js have no problem")
    func shipped() async throws {
        let run = try await Self.check(Self.console)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("0 problem(s)"))
    }

    @Test(
        "the checker fails on an unclosed element, an inline handler, an unbalanced brace and a JavaScript syntax error",
        arguments: [
            ("console.html", "</header>", "", "is never closed"),
            ("console.html", "<header>", "<header onclick=\"x()\">", "inline handler onclick"),
            ("console.css", "* { box-sizing: border-box; }", "* { box-sizing: border-box;", "not closed"),
            ("console.js", "\"use strict\";", "\"use strict\"; const = ;", "console.js: ")
        ])
    func breakage(file: String, original: String, replacement: String, expected: String) async throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(at: Self.console, to: copy)
        let path = copy.appendingPathComponent(file)
        let text = try String(contentsOf: path, encoding: .utf8)
        try #require(text.contains(original), "\(file) no longer contains \(original)")
        try text.replacingOccurrences(of: original, with: replacement).write(to: path, atomically: true, encoding: .utf8)
        let run = try await Self.check(copy)
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains(expected), "\(run.output)")
    }
}
