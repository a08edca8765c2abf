//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import TestSupport
import TestTiers
import Testing

/// I/O errors and power loss, injected into a real child process by the LD_PRELOAD shim in
/// Tools/io-fault-shim, on real LMDB files.
@Suite("I/O faults and power loss", .serialized, .timeLimit(.minutes(5)), .integration)
struct IOFaultTests {
    /// Every acknowledged append is in the reopened log at its position, and the chain verifies.
    private func expectSurvivors(_ acknowledged: [CrashTests.Ack], in path: String, _ context: String) throws {
        let log = try EventLog(path: path)
        defer { log.close() }
        for ack in acknowledged {
            let record = try log.record(at: ack.position)
            #expect(record?.eventID == ack.eventID, "acknowledged event at \(ack.position) lost (\(context))")
        }
        let report = try log.verifyBlocking()
        #expect(report.isIntact, "\(report.problem?.description ?? "") (\(context))")
    }

    @Test(
        "power loss in durable mode: cuts continue until 4 of them landed in unflushed windows; every acknowledged append survives, the log verifies")
    func durablePowerLoss() async throws {
        let directory = TemporaryDirectory("powerloss")
        defer { directory.cleanup() }
        let path = directory.path("log")
        let environment = try FaultShim.environment(["IOFAULT_FILES": "data.mdb", "IOFAULT_POWER_LOSS": "1"])
        var generator = SplitMix64(seed: 0xD0_0B1E)
        var acknowledged: [CrashTests.Ack] = []
        var bytesRolledBack = 0
        // A cut whose undo changed the file's bytes landed between a commit's writes and its
        // fdatasync: the window where a durable log could lose an acknowledged append if it
        // acknowledged too early. (Measured on the bytes: a journal of writes proves nothing.)
        var cutsInWindow = 0
        var cuts = 0
        while cutsInWindow < 4 && cuts < 100 {
            // Index flushes every 16 records: their commits write many pages (long unflushed
            // windows), and a cut in the middle of one must lose nothing either.
            let child = try await ChildRun.run(
                path: path, run: cuts, indexTailLimit: 16, environment: environment,
                milliseconds: 60 + Int(generator.next() % 240))
            acknowledged += child.acknowledged
            let outcome = try PowerLoss.strike(directory.path)
            cuts += 1
            bytesRolledBack += outcome.bytesChanged
            if outcome.bytesChanged > 0 { cutsInWindow += 1 }
            try expectSurvivors(acknowledged, in: path, "after power loss \(cuts)")
        }
        print(
            "durable power loss: \(cuts) cuts, \(cutsInWindow) inside unflushed windows, \(acknowledged.count) acknowledged appends, 0 lost, \(bytesRolledBack) bytes rolled back"
        )
        #expect(cutsInWindow >= 4, "only \(cutsInWindow) of \(cuts) cuts changed the file")
        #expect(acknowledged.count > 100)
    }

    @Test("power loss in relaxed mode: everything up to the last sync survives, later appends may not, the log is an intact prefix")
    func relaxedPowerLoss() async throws {
        let directory = TemporaryDirectory("powerloss-relaxed")
        defer { directory.cleanup() }
        let path = directory.path("log")
        let environment = try FaultShim.environment(["IOFAULT_FILES": "data.mdb", "IOFAULT_POWER_LOSS": "1"])
        var generator = SplitMix64(seed: 0x7E1A_ED)
        var lost = 0
        var kept: [CrashTests.Ack] = []
        var bytesRolledBack = 0
        for run in 0..<8 {
            // Counted from the first sync: a slow start leaves the run its whole window.
            let child = try await ChildRun.run(
                path: path, run: run, mode: "relaxed", environment: environment,
                milliseconds: 400 + Int(generator.next() % 300), from: .firstSync)
            #expect(child.syncedThrough > 0, "the child synced at least once in run \(run)")
            bytesRolledBack += try PowerLoss.strike(directory.path).bytesChanged
            let log = try EventLog(path: path)
            let last = try log.lastPosition()
            #expect(last >= child.syncedThrough, "the log ends before its last sync (run \(run))")
            for ack in child.acknowledged {
                let present = try log.record(at: ack.position)?.eventID == ack.eventID
                if ack.position <= child.syncedThrough {
                    #expect(present, "a synced append at \(ack.position) lost (run \(run))")
                } else if !present {
                    lost += 1
                }
                if present { kept.append(ack) }
            }
            let report = try await log.verify()
            #expect(report.isIntact, "\(report.problem?.description ?? "") (run \(run))")
            #expect(report.recordsChecked == last, "the log is a prefix without gaps (run \(run))")
            await log.close()
        }
        print(
            "relaxed power loss: 8 cuts, \(kept.count) acknowledged appends kept, \(lost) acknowledged after the last sync lost, \(bytesRolledBack) bytes rolled back"
        )
        #expect(bytesRolledBack > 0)
        // The mode really loses unsynced appends under this simulation: the test can tell.
        #expect(lost > 0)
        try expectSurvivors(kept, in: path, "at the end")
    }

    @Test(
        "an injected EIO or ENOSPC: appends fail with a clear error, nothing acknowledged is lost, appends resume",
        arguments: ["fdatasync:EIO:40:6", "pwrite:ENOSPC:60:12", "pwrite:EIO:45:3"])
    func injectedFault(spec: String) async throws {
        let directory = TemporaryDirectory("iofault")
        defer { directory.cleanup() }
        let path = directory.path("log")
        let environment = try FaultShim.environment(["IOFAULT_FILES": "data.mdb", "IOFAULT_FAIL": spec])
        // At least 700 ms from opening the log, and only once the fault reached the appender and
        // appends were acknowledged after its window closed.
        let child = try await ChildRun.run(path: path, run: 0, writers: 2, environment: environment, milliseconds: 700) { child in
            !child.failures.isEmpty && child.acknowledgedAfterLastFailure > 10
        }
        print(
            "\(spec): \(child.failures.count) failed appends, \(child.acknowledged.count) acknowledged, \(child.acknowledgedAfterLastFailure) after the last failure"
        )
        #expect(!child.failures.isEmpty, "the fault reached the appender")
        let expected = spec.contains("ENOSPC") ? "No space left on device" : "Input/output error"
        #expect(child.failures.allSatisfy { $0.contains(expected) && $0.contains(path) }, "\(child.failures.first ?? "")")
        // Appends were acknowledged after the fault window closed.
        #expect(child.acknowledgedAfterLastFailure > 10)
        try expectSurvivors(child.acknowledged, in: path, spec)
    }
}
