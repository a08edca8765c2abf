//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import LMDB
import TestSupport
import TestTiers
import Testing

/// The repository's root, found from this file's place in it.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// True when `python3` can import `lmdb` (CI installs it; see `.ci/run`). It waits for a `python3`
/// process: the suite's condition reads it first, off the cooperative pool.
let pythonLMDBAvailable: Bool = {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", "import lmdb"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}()

/// Runs `Tools/format-check.py` and returns its exit status, standard output and standard error.
func runFormatCheck(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
    let run = try await runProgram(
        URL(fileURLWithPath: "/usr/bin/env"), ["python3", repositoryRoot.appendingPathComponent("Tools/format-check.py").path] + arguments)
    return (run.status, run.output, run.errors)
}

@Suite(
    "FORMAT.md is enough to read the log", .enabled("needs python3 with the lmdb package") { try await offThePool { pythonLMDBAvailable } },
    .integration)
struct FormatDocumentTests {
    @Test("an independent Python reader decodes every field and re-checks the chain")
    func pythonReadsEverything() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path, options: relaxed)
        let metadata = EventMetadata(actor: "admin@example.org", correlationID: "req-7", causationID: nil, extra: ["ip": "192.0.2.1", "ü": "ß"])
        _ = try await log.append(
            ProposedEvent(type: "account.created", schemaVersion: 2, metadata: metadata, payload: Data([0, 1, 2, 0xFF])), to: "alice")
        _ = try await log.append([event("b", "second"), event("c", "")], to: "bob")
        _ = try await log.append(event("d", String(repeating: "long ", count: 1_000)), to: "alice")
        let swiftRecords = try await log.read()
        let head = try await log.verify().headHash
        await log.close()

        let result = try await runFormatCheck(["--json", path])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.contains("OK 4 records, head hash \(head)"))
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == swiftRecords.count)
        for (line, record) in zip(lines, swiftRecords) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["position"] as? Int == Int(record.position))
            #expect(object["stream"] as? String == record.streamID)
            #expect(object["streamVersion"] as? Int == Int(record.streamVersion))
            #expect(object["eventID"] as? String == record.eventID.uuidString)
            #expect(object["type"] as? String == record.type)
            #expect(object["schemaVersion"] as? Int == Int(record.schemaVersion))
            #expect(object["timestampMicros"] as? Int == Int((record.timestamp.timeIntervalSince1970 * 1_000_000).rounded()))
            #expect(object["payloadHex"] as? String == record.payload.map { String(format: "%02x", $0) }.joined())
            #expect(object["hashHex"] as? String == record.hash.description)
            var expectedMetadata = record.metadata.extra
            if let actor = record.metadata.actor { expectedMetadata["actor"] = actor }
            if let correlation = record.metadata.correlationID { expectedMetadata["correlation-id"] = correlation }
            #expect(object["metadata"] as? [String: String] == expectedMetadata)
        }
    }

    @Test("the Python reader finds the same damage verify finds")
    func pythonFindsDamage() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanup() }
        let path = directory.path("log")
        let log = try EventLog(path: path, options: relaxed)
        _ = try await log.append((1...5).map { event("t", "record-\($0)") }, to: "s")
        await log.close()
        let environment = try Environment(path: path)
        let records = try environment.openDatabase("records")
        try environment.write { txn in
            var value = try #require(try txn.get(records, key: BigEndian.bytes(3)))
            value[value.count - 1] ^= 0x20
            try txn.put(records, key: BigEndian.bytes(3), value: value)
        }
        environment.close()
        let result = try await runFormatCheck([path])
        #expect(result.status == 1)
        #expect(result.errors.contains("BAD position 3: checksum mismatch"))
    }
}
