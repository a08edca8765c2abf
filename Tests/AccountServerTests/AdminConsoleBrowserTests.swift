//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import TestTiers
import Testing

@Suite("The audit console in a real browser", .integration)
struct AdminConsoleBrowserTests {
    /// The package's folder (screenshots go under its `.build`).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `Tests/Browser/console_check.py` drives headless Chromium (Debian's `chromium` and
    /// `chromium-driver`, through Selenium; `Tools/run.sh test` installs them) against a real
    /// `accountctl serve`, after accounts were signed up, modified and deleted through the API.
    /// It signs in through the page's form, and at the end a page on another origin of this host
    /// form-POSTs a verify and navigates to a history (both refused, nothing audited), then it
    /// signs out. A missing browser fails the test.
    @Test(
        "sign-in form, timeline with before/after and redaction, a 24-point chart, verify, rebuild, a live tail fed by another process, cross-site requests refused, sign-out"
    )
    func console() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("console-store-\(UUID().uuidString)")
        let credential = FileManager.default.temporaryDirectory.appendingPathComponent("console-admin-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: credential)
        }
        try "auditor:an auditor's long password\n".write(to: credential, atomically: true, encoding: .utf8)
        let server = try ServeProcess(store: store, extra: ["--admin-credential-file", credential.path])
        try await server.start()

        let live = try await server.send(
            "POST", "/v1/accounts",
            json: #"{"userId":"alice@example.org","password":"correct horse battery","name":{"givenName":"Alice","familyName":"Liddell"}}"#)
        try #require(live.status == 201)
        let liveToken = try #require(live.body["token"] as? String)
        let liveId = try #require((live.body["account"] as? [String: Any])?["accountId"] as? String)
        let renamed = try await server.send(
            "PATCH", "/v1/account", token: liveToken, json: #"{"set":{"name":{"givenName":"Alicia","familyName":"Liddell"}}}"#)
        #expect(renamed.status == 200)
        let wrong = try await server.send("POST", "/v1/sessions", json: #"{"userId":"alice@example.org","password":"not the password"}"#)
        #expect(wrong.status == 401)
        let gone = try await server.send(
            "POST", "/v1/accounts", json: #"{"userId":"bob@example.org","password":"correct horse battery","name":{"givenName":"Bartholomew"}}"#)
        let goneToken = try #require(gone.body["token"] as? String)
        let goneId = try #require((gone.body["account"] as? [String: Any])?["accountId"] as? String)
        #expect(try await server.send("DELETE", "/v1/account", token: goneToken, json: #"{"currentPassword":"correct horse battery"}"#).status == 204)

        let expect: [String: Any] = [
            "liveUserId": "alice@example.org", "liveAccountId": liveId, "before": "Alice", "after": "Alicia", "deletedAccountId": goneId,
            "deletedGivenName": "Bartholomew",
            "signups": 2, "deletions": 1, "failedLogins": 1, "projection": "account-details"
        ]
        let append = [
            ServeProcess.binary.path, "signup", "--store", store.path, "--user-id", "tail@example.org", "--name", "Tail Writer", "--password-stdin"
        ]
        let screenshots = Self.packageRoot.appendingPathComponent(".build/console-screenshots")
        // Screenshots of an earlier run must not satisfy the checks below: they go first, and
        // each new one must be newer than this run's start.
        try? FileManager.default.removeItem(at: screenshots)
        let runStarted = Date()
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("console-check-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: report) }
        _ = FileManager.default.createFile(atPath: report.path, contents: nil)
        let check = ChildProcess()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = [
            "python3", Self.packageRoot.appendingPathComponent("Tests/Browser/console_check.py").path,
            "--base", server.base, "--admin", "auditor:an auditor's long password",
            "--expect", String(decoding: try JSONSerialization.data(withJSONObject: expect), as: UTF8.self),
            "--append", String(decoding: try JSONSerialization.data(withJSONObject: append), as: UTF8.self),
            "--screenshots", screenshots.path
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["ACCOUNTCTL_INSECURE_FAST_HASHING"] = "1"
        check.environment = environment
        let output = try FileHandle(forWritingTo: report)
        check.standardOutput = output
        check.standardError = output
        try check.run()
        while check.isRunning { try await Task.sleep(for: .milliseconds(200)) }
        try output.close()
        let text = try String(contentsOf: report, encoding: .utf8)
        #expect(
            check.terminationStatus == 0,
            "the console check failed (or Chromium, chromium-driver or Selenium are missing: Tools/run.sh install-test-dependencies):\n\(text)")
        // Not vacuous: the script ran its checks to the end.
        #expect(text.contains("all checks passed") && text.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count >= 22, "\(text)")
        for name in ["timeline", "deleted-account", "verified", "console", "erased", "signed-out"] {
            let path = screenshots.appendingPathComponent("\(name).png").path
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            let written = attributes?[.modificationDate] as? Date
            let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
            #expect(
                written.map { $0 >= runStarted.addingTimeInterval(-1) } == true && size > 1_000,
                "screenshot \(name): \(String(describing: written)), \(size) bytes")
        }

        // The audit stream names the administrator for each look and each job.
        let audit = try await server.sendList("/admin/api/audit", basic: "auditor:an auditor's long password")
        let actions = audit.compactMap { $0["action"] as? String }
        // Alice, Bob, Alice again for the actions, once more after disabling, enabling and erasing.
        #expect(actions.filter { $0 == "admin.history-viewed" }.count == 6, "\(actions)")
        #expect(
            Set(actions).isSuperset(of: [
                "admin.verified", "admin.rebuild-started", "admin.rebuild-finished", "admin.sessions-ended", "admin.account-disabled",
                "admin.account-enabled", "admin.account-erased"
            ]), "\(actions)")
        #expect(actions.filter { $0 == "admin.account-erased" }.count == 1, "the cross-site erasure was refused: \(actions)")
        let erased = try #require(audit.first { $0["action"] as? String == "admin.account-erased" })
        #expect(erased["accountId"] as? String == liveId)
        #expect((erased["outcome"] as? String)?.contains("the owner asked by mail") == true, "\(erased)")
        #expect(audit.allSatisfy { $0["admin"] as? String == "auditor" })
        #expect(await server.terminate() == 0)
    }
}
