//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import SpeziAccountStore
import TestSupport
import TestTiers
import Testing

/// The console's verify job on a log damaged under it (a byte of a record flipped by another
/// process through LMDB, as a bad disk or a careless tool would): the job reports the damage and
/// where, and the audit records a failed verification.
@Suite("A verify job that finds damage", .integration)
struct AdminVerifyDamageTests {
    static let password = "a long admin password"

    @Test("a flipped byte in record 3: the job ends with the position and the checksum mismatch; lastVerification says not intact")
    func damageFound() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        let basic: HTTPFields = [.authorization: "Basic \(Data("grace:\(Self.password)".utf8).base64EncodedString())"]
        let fixture = ServerFixture()
        try await fixture.withServer(configuration: configuration) { api, store in
            for index in 0..<3 { _ = try await api.signup("user\(index)@example.org") }
            // Python's lmdb (Tools/run.sh installs it) rewrites record 3 with one payload byte flipped.
            let logPath = fixture.directory.appendingPathComponent("log").path
            let damage = try await runProgram(
                URL(fileURLWithPath: "/usr/bin/env"),
                [
                    "python3", "-c",
                    """
                    import lmdb, struct, sys
                    env = lmdb.open(sys.argv[1], max_dbs=8)
                    records = env.open_db(b"records")
                    with env.begin(write=True) as txn:
                        key = struct.pack(">Q", 3)
                        value = bytearray(txn.get(key, db=records))
                        value[-1] ^= 0xFF
                        txn.put(key, bytes(value), db=records)
                    """, logPath
                ])
            try #require(damage.status == 0, "the damage step failed: \(damage.errors)")

            let started = try await api.send(.post, "/admin/api/verify", headers: basic)
            #expect(started.status == 202)
            let id = try #require(started.body["id"] as? String)
            var job = started
            for _ in 0..<400 {
                job = try await api.send(.get, "/admin/api/jobs/\(id)", headers: basic)
                if job.body["state"] as? String != "running" { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let result = try #require(job.body["result"] as? String, "\(job.text)")
            #expect(!result.hasPrefix("intact"), "\(job.text)")
            #expect(result.contains("3") && result.lowercased().contains("checksum"), "\(job.text)")
            let log = try await api.send(.get, "/admin/api/log", headers: basic)
            let last = try #require(log.body["lastVerification"] as? [String: Any], "\(log.text)")
            #expect(last["intact"] as? Bool == false && last["admin"] as? String == "grace", "\(log.text)")
            #expect(try await store.adminActions().first?.action.typeName == "admin.verified")
        }
    }
}
