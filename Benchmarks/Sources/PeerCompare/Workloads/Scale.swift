//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import Projections
import SpeziAccountStore

/// `--scale`: how the costs grow with the log. For one size, in one child process per back end:
/// the data set imported (the `import` row's batches), its file size per event, the time to open
/// it again, scan and replay (the `replay` rows), verify (the log), the details table built and
/// rebuilt (the `rebuild` row) and, for the log, the time to open the built store again.
enum ScaleWorkload {
    static func run(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        guard backEnd == .log || backEnd == .raw else { throw ChildError(reason: "--scale runs on the log and raw LMDB") }
        var figures: [Figure] = []
        let folder = backEnd == .raw ? BulkWorkloads.rawPath(directory) : BulkWorkloads.logPath(directory)
        var imported = try await BulkWorkloads.importing(scale, backEnd, into: backEnd == .raw ? folder : directory)
        imported.notes["bytesPerEvent"] = Double(try allocatedBytes(folder.appendingPathComponent("data.mdb"))) / Double(scale.records)
        figures.append(imported)
        progress("imported \(count(scale.records)) events on \(backEnd.title)")
        if backEnd == .raw {
            let target = directory.appendingPathComponent("import-workequal")
            figures.append(try WorkEqualImport.importing(scale, into: target))
            try? FileManager.default.removeItem(at: target)
            progress("imported \(count(scale.records)) events on the work-equal raw loop")
        }
        figures.append(try opening(scale, backEnd, directory))
        figures += try await BulkWorkloads.replay(scale, backEnd, in: directory)
        progress("replayed")
        if backEnd == .log { figures.append(try verifying(scale, directory)) }
        figures += try await DetailsWorkloads.rebuild(scale, backEnd, in: directory)
        progress("rebuilt the details table")
        if backEnd == .log { figures.append(try await openingStore(scale, directory)) }
        return figures
    }

    private static func progress(_ message: String) {
        FileHandle.standardError.write(Data("  \(message)\n".utf8))
    }

    /// The disk space the file takes (allocated blocks, not its apparent length).
    static func allocatedBytes(_ file: URL) throws -> Int {
        var status = stat()
        guard stat(file.path, &status) == 0 else { throw ChildError(reason: "cannot stat \(file.path)") }
        return Int(status.st_blocks) * 512
    }

    /// The median of five opens of the existing log (or raw environment), each followed by a read
    /// of its last position, then closed.
    static func opening(_ scale: Scale, _ backEnd: BackEnd, _ directory: URL) throws -> Figure {
        var samples: [Double] = []
        for _ in 0..<5 {
            var watch = Stopwatch()
            switch backEnd {
            case .log:
                let log = try watch.time {
                    let log = try BulkWorkloads.openLog(directory)
                    let last = try log.lastPosition()
                    precondition(last == UInt64(scale.records), "the log holds \(last) records")
                    return log
                }
                log.close()
            default:
                _ = try watch.time {
                    let raw = try RawLMDB(directory: BulkWorkloads.rawPath(directory), sync: .relaxed)
                    return try raw.read { txn in try raw.forEachRecord(txn, after: UInt64(scale.records - 1)) { _, _ in } }
                }
            }
            samples.append(watch.seconds)
        }
        return Figure("open", "open the existing log, read its last position", backEnd, operations: 1, seconds: samples.sorted()[2])
    }

    /// A full verification: every record's checksum, the hash chain and the indexes.
    static func verifying(_ scale: Scale, _ directory: URL) throws -> Figure {
        let log = try BulkWorkloads.openLog(directory)
        defer { log.close() }
        var watch = Stopwatch()
        let report = try watch.time { try log.verifyBlocking() }
        precondition(report.isIntact && report.recordsChecked == UInt64(scale.records), "verify: \(report)")
        return Figure("verify", "verify every record and the chain", .log, operations: scale.records, seconds: watch.seconds)
    }

    /// The median of nine opens of the built details table beside the log, until it has caught up.
    /// (One open starts three threads and hands work between them; on a two-core machine single
    /// opens of the same store took from 0.5 to 2.4 ms, so three samples were not enough.)
    static func openingStore(_ scale: Scale, _ directory: URL) async throws -> Figure {
        var samples: [Double] = []
        for _ in 0..<9 {
            var watch = Stopwatch()
            let (log, store) = try await watch.timeAsync {
                let log = try BulkWorkloads.openLog(directory)
                let store = try ProjectionStore(
                    path: DetailsWorkloads.projectionsPath(directory).path, log: log, projections: [AccountDetailsProjection()],
                    options: DetailsWorkloads.buildOptions)
                try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: UInt64(scale.records))
                return (log, store)
            }
            await store.close()
            await log.close()
            samples.append(watch.seconds)
        }
        return Figure(
            "open-store", "open the log and its built details table, caught up", .log, operations: 1, seconds: samples.sorted()[4])
    }
}
