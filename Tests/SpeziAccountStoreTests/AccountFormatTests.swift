//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLog
import Foundation
import SpeziAccount
import TestSupport
import TestTiers
import Testing

@testable import SpeziAccountStore

private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// True when `python3` can import `lmdb`; first read off the cooperative pool (by the suite's
/// condition), as it waits for a `python3` process.
private let pythonHasLMDB: Bool = {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", "import lmdb"]
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}()

@Suite(
    "FORMAT.md is enough to read account events", .enabled("needs python3 with the lmdb package") { try await offThePool { pythonHasLMDB } },
    .integration)
struct AccountFormatTests {
    @Test("Tools/format-check.py --accounts decodes every account event as the Swift decoder does (unsealed store)")
    func pythonDecodesAccountEvents() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open { $0.cryptoShredding = false }
        let id = try await store.signup(leland()).accountId
        var change = AccountDetails()
        change.genderIdentity = .female
        var removed = AccountDetails()
        removed.dateOfBirth = Date()
        try await store.modify(id, try AccountModifications(modifiedDetails: change, removedAccountDetails: removed))
        var userId = AccountDetails()
        userId.userId = "jane@stanford.edu"
        userId.password = "StanfordRocks123!"
        try await store.modify(id, try AccountModifications(modifiedDetails: userId))
        _ = try? await store.login(userId: "jane@stanford.edu", password: "wrong")
        _ = try await store.login(userId: "jane@stanford.edu", password: "StanfordRocks123!")
        // Stronger parameters: the next login (the session's) stores a new hash, `account.password-rehashed`.
        await store.close()
        store = try await fixture.open {
            $0.cryptoShredding = false
            $0.passwordParameters = ScryptParameters(logN: 11, blockSize: 8, parallelism: 1)
        }
        try await store.requestPasswordReset(userId: "jane@stanford.edu")
        // From a named client: `auth.session-client` beside the session's start.
        var opening = AccountStore.Context()
        opening.sessionClient = SessionClient(address: "127.0.0.1", userAgent: "format-test/1 (ü)")
        let (_, session) = try await store.startSession(
            userId: "jane@stanford.edu", password: "StanfordRocks123!", validity: .seconds(600), context: opening)
        try await store.endSession(token: session.token)
        // A second factor: enrolled, confirmed, used at a sign-in, a recovery code, removed.
        let enrolment = try await store.enrolTOTP(id, issuer: "Format")
        let totp = try TOTP(secret: try #require(TOTP.bytes(base32: enrolment.secret)))
        try await store.confirmTOTP(id, code: totp.code(at: Date()))
        _ = try await store.login(
            userId: "jane@stanford.edu", password: "StanfordRocks123!", secondFactor: totp.code(at: Date().addingTimeInterval(30)))
        try await store.removeTOTP(id, code: enrolment.recoveryCodes[0])
        try await store.logout(id)
        try await store.accounts.append(
            [.externalDetailsModified(modified: ["biography": Data("\"ü ß\"".utf8)], removed: ["x"]), .externalDetailsErased],
            to: id, expectedVersion: .any)
        let anonymous = try await store.signInAnonymously()
        try await store.upgrade(anonymous.accountId, with: leland(userId: "guest@stanford.edu"))
        try await store.link(
            LinkedIdentity(issuer: "https://appleid.apple.com", subject: "001234.ab.0042"), to: anonymous.accountId, providerToken: "r.apple.1")
        try await store.recordProviderTokenRevoked(
            ProviderTokenRevocation(accountId: anonymous.accountId, issuer: "https://appleid.apple.com", token: "r.apple.1"))
        try await store.unlinkIdentity(issuer: "https://appleid.apple.com", from: anonymous.accountId)
        try await store.disable(anonymous.accountId, reason: "a support ticket, ü")
        try await store.enable(anonymous.accountId, reason: "resolved")
        try await store.delete(id)
        let records = try await store.log.read()
        await store.close()

        let check = try await runProgram(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", repositoryRoot.appendingPathComponent("Tools/format-check.py").path, "--json", "--accounts",
                fixture.directory.appendingPathComponent("log").path
            ])
        #expect(check.status == 0)
        let lines = Data(check.output.utf8).split(separator: UInt8(ascii: "\n"))
        #expect(lines.count == records.count)
        #expect(Set(records.map(\.type)) == Set(AccountEvent.currentSchemaVersions.keys))

        for (line, record) in zip(lines, records) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            let python = try #require(object["event"] as? [String: Any], "no decoded event for \(record.type)")
            let swift = try store.accounts.event(from: record)
            #expect(try Self.fields(of: swift) == Self.normalized(python), "\(record.type)")
        }
    }

    /// The Swift event's fields in the Python decoder's shape (values as parsed JSON, normalized to
    /// strings), read as the event catalogue declares them.
    static func fields(of event: AccountEvent) throws -> [String: String] {
        guard let kind = event.kind else { return [:] }
        func values(_ values: EncodedAccountValues) -> String {
            values.keys.sorted().map { "\($0)=\(canonical(try? JSONSerialization.jsonObject(with: values[$0]!, options: .fragmentsAllowed)))" }
                .joined(separator: ",")
        }
        let fields = try event.encodedPayload().withUnsafeBytes { try kind.declaration.readFields($0) }
        return Dictionary(
            uniqueKeysWithValues: fields.map { field, value in
                let text =
                    switch value {
                    case let .string(string): string
                    case let .optionalString(string): string ?? "nil"
                    case let .bool(flag): "\(flag)"
                    case let .varint(number): "\(number)"
                    case let .strings(strings): strings.joined(separator: ",")
                    case let .values(map): values(map)
                    }
                return (field.name, text)
            })
    }

    static func normalized(_ python: [String: Any]) -> [String: String] {
        python.mapValues { value in
            switch value {
            case let values as [String: Any]: values.keys.sorted().map { "\($0)=\(canonical(values[$0]))" }.joined(separator: ",")
            case let strings as [String]: strings.joined(separator: ",")
            case let flag as Bool: "\(flag)"
            case let string as String: string
            case is NSNull: "nil"
            default: "\(value)"
            }
        }
    }

    /// A JSON value re-serialized with sorted keys, so both sides compare as text.
    static func canonical(_ value: Any?) -> String {
        guard let value, let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else { return "?" }
        return String(decoding: data, as: UTF8.self)
    }
}
