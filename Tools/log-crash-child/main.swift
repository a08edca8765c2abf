//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// The child process of the event log's crash test: appends durable events from several tasks until
// it is killed, and tells the parent about every append the log acknowledged, one line each:
//   ack <position> <event id> <stream> <stream version>
//   fail <error>                     (an append the log refused; the writer tries again)
//   synced <position>                (relaxed mode: everything up to here has been flushed)
// Usage: log-crash-child <log path> <run number> [writers] [durable|relaxed|bulk] [index tail limit]
//   bulk: each writer commits batches of 100 streams × 3 events (durable), as an import does, so
//   the unindexed tail may grow to 32 times the index tail limit between index flushes.
//        log-crash-child <log path> hold-reader     (opens a read transaction and waits to be killed)
//        log-crash-child <log path> hold-writer     (holds LMDB's write lock until a line comes in, then
//                                                    keeps the log open until its input closes)

import EventLog
import EventLogProtocol
import Foundation
import LMDB

let arguments = CommandLine.arguments
if arguments.count == 3 && arguments[2] == "hold-reader" {
    do {
        let environment = try Environment(path: arguments[1])
        try environment.read { _ in
            FileHandle.standardOutput.write(Data("reading\n".utf8))
            while true { sleep(60) }
        }
    } catch {
        FileHandle.standardError.write(Data("log-crash-child: \(error)\n".utf8))
        exit(1)
    }
}
if arguments.count == 3 && arguments[2] == "hold-writer" {
    do {
        let environment = try Environment(path: arguments[1])
        try environment.write { _ in
            FileHandle.standardOutput.write(Data("writing\n".utf8))
            _ = readLine()
        }
        FileHandle.standardOutput.write(Data("released\n".utf8))
        _ = FileHandle.standardInput.readDataToEndOfFile()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("log-crash-child: \(error)\n".utf8))
        exit(1)
    }
}
guard arguments.count >= 3, let run = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: log-crash-child <log path> <run number> [writers] [durable|relaxed] [index tail limit]\n".utf8))
    exit(64)
}
let writers = arguments.count > 3 ? Int(arguments[3]) ?? 4 : 4
let relaxedMode = arguments.count > 4 && arguments[4] == "relaxed"
let bulkMode = arguments.count > 4 && arguments[4] == "bulk"
let indexTailLimit = arguments.count > 5 ? Int(arguments[5]) : nil
let output = NSLock()

func report(_ line: String) {
    output.lock()
    defer { output.unlock() }
    // An unbuffered write: once it returns, the parent can read the line even if we are killed next.
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Reports each event of a committed append as an `ack` line, with its position and stream version.
func acknowledge(_ events: [ProposedEvent], of stream: String, _ result: AppendResult) {
    for (offset, event) in events.enumerated() {
        let position = result.positions.lowerBound + UInt64(offset)
        let version = result.streamVersion - UInt64(events.count - 1 - offset)
        report("ack \(position) \(event.eventID.uuidString) \(stream) \(version)")
    }
}

do {
    var options = EventLogOptions()
    if relaxedMode { options.sync = .relaxed }
    if let indexTailLimit {
        // Bulk commits may then leave 32 times the limit unindexed (the rule before the bulk limit
        // had an option of its own), so that kills land on tails of every length.
        options.indexTailLimit = indexTailLimit
        options.bulkIndexTailLimit = indexTailLimit * 32
    }
    if bulkMode && run % 2 == 0 {
        // Every other bulk run keeps its tail until a commit flushes it: a loaded machine slows
        // the importer enough for the idle flush to write the tail before most kills. The other
        // runs keep the idle flush, so that some kills land in one. These runs also flush less
        // often (every 128 × the limit), so that few kills land in the one commit after a flush,
        // the only time their tail is short.
        options.idleIndexFlushDelay = .seconds(3_600)
        if let indexTailLimit { options.bulkIndexTailLimit = indexTailLimit * 128 }
    }
    let log = try EventLog(path: arguments[1], options: options)
    report("ready \(try log.lastPosition())")
    if bulkMode {
        // Runs until the process is killed, like the plain writers below in the other modes.
        try await bulkAppends(log, run: run, writers: writers)
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<writers {
            group.addTask {
                var index = 0
                while true {
                    let stream = "run\(run)-writer\(writer)"
                    let batch = (0..<(index % 3 + 1)).map { offset in
                        ProposedEvent(type: "crash.test", payload: Data("\(run)/\(writer)/\(index)/\(offset)".utf8))
                    }
                    let result: AppendResult
                    do {
                        result = try await log.append(batch, to: stream, expectedVersion: index == 0 ? .noStream : .any)
                    } catch {
                        // An I/O fault: say so and try again; nothing of this append was acknowledged.
                        report("fail \(error)")
                        try await Task.sleep(for: .milliseconds(2))
                        continue
                    }
                    acknowledge(batch, of: stream, result)
                    index += 1
                    if relaxedMode && writer == 0 && index % 10 == 0 {
                        // Everything at or before `position` is on disk once sync returns.
                        let position = try log.lastPosition()
                        do {
                            try log.sync()
                            report("synced \(position)")
                        } catch {
                            report("fail \(error)")
                        }
                    }
                }
            }
        }
        try await group.waitForAll()
    }
} catch {
    FileHandle.standardError.write(Data("log-crash-child: \(error)\n".utf8))
    exit(1)
}

/// Commits of 300 events over 100 streams from each writer until the process is killed; every
/// event of a batch that committed is acknowledged.
func bulkAppends(_ log: EventLog, run: Int, writers: Int) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<writers {
            group.addTask {
                var round = 0
                while true {
                    let appends = (0..<100).map { slot in
                        StreamAppend(
                            streamID: "run\(run)-bulk\(writer)-\(slot)",
                            events: (0..<3).map { offset in
                                ProposedEvent(type: "crash.bulk", payload: Data("\(run)/\(writer)/\(slot)/\(round)/\(offset)".utf8))
                            },
                            expectedVersion: round == 0 ? .noStream : .exact(UInt64(round * 3)))
                    }
                    for (append, outcome) in zip(appends, await log.appendBatch(appends)) {
                        switch outcome {
                        case .success(let result):
                            acknowledge(append.events, of: append.streamID, result)
                        case .failure(let error):
                            report("fail \(error)")
                        }
                    }
                    round += 1
                }
            }
        }
        try await group.waitForAll()
    }
}
