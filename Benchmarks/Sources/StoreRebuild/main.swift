//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// Rebuild of the details cache from the log, with peak memory, against a floor measured in the
// same run: the same projection machinery folding the same records without decoding (a payload
// copy per account). Each phase runs in its own process so that its peak RSS is its own.
//
//   swift run -c release store-rebuild [--accounts 100000] [--events-per-account 10]
//   store-rebuild write DIR ACCOUNTS EVENTS   (phase 1: fill a store; internal)
//   store-rebuild rebuild DIR                 (phase 2: time both rebuilds; internal)

import EventLog
import EventLogProtocol
import Foundation
import Projections
import SpeziAccount
import SpeziAccountStore
import SpeziAccountTesting

/// The projection floor: per account, the last payload, copied; no decoding, no sealing.
struct PayloadCopyProjection: Projection {
    var name: String { "payload-copy" }
    var fingerprint: String { "payload-copy v1" }
    var databaseNames: [String] { ["copies"] }
    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        try state.put("copies", key: record.withStreamIDBytes { Array($0) }, value: record.withPayload { Array($0) })
    }
}

func peakRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
    else { return -1 }
    return kilobytes / 1024
}

/// The process's anonymous (heap) resident memory, which excludes the log's memory-mapped pages.
func anonymousRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }),
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
    else { return -1 }
    return kilobytes / 1024
}

/// Samples the anonymous RSS every 20 ms on a thread of its own and keeps the highest value.
final class PeakSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0.0
    private var running = true

    init() {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let current = anonymousRSSMegabytes()
                lock.withLock { peak = max(peak, current) }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }

    func stop() -> Double {
        lock.withLock {
            running = false
            return max(peak, anonymousRSSMegabytes())
        }
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func storeOptions() -> AccountStoreOptions {
    var options = AccountStoreOptions()
    options.sync = .relaxed
    return options
}

/// Phase 1: accounts with one `account.created` and `eventsPerAccount - 1` `account.details-modified`
/// events of realistic size (name, date of birth, gender identity, a ~150-byte biography), sealed.
func write(directory: String, accounts: Int, eventsPerAccount: Int) async throws {
    let store = try await AccountStore(directory: directory, options: storeOptions())
    let encoder = JSONEncoder()
    let batch = 1_000
    var written = 0
    for first in stride(from: 0, to: accounts, by: batch) {
        let ids = (first..<min(first + batch, accounts)).map { String(format: "acct-%08d", $0) }
        try store.seedKeys(for: ids)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (offset, id) in ids.enumerated() {
                group.addTask {
                    let index = first + offset
                    var events: [AccountEvent] = [
                        .accountCreated(
                            userId: "user\(index)@example.org",
                            passwordHash: "$scrypt$ln=17,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U",
                            isAnonymous: false,
                            values: [
                                "name": try encoder.encode(PersonNameComponents(givenName: "Given\(index)", familyName: "Family\(index)")),
                                "genderIdentity": Data("\"female\"".utf8)
                            ])
                    ]
                    for step in 1..<eventsPerAccount {
                        let bio = String(repeating: "Biography text \(step) of account \(index). ", count: 4)
                        events.append(
                            .detailsModified(
                                modified: [
                                    "biography": try encoder.encode(bio),
                                    "dateOfBirth": try encoder.encode(Date(timeIntervalSince1970: Double(index * 86_400 % 1_000_000_000)))
                                ],
                                removed: step % 3 == 0 ? ["genderIdentity"] : []))
                    }
                    try await store.seed(events, as: id)
                }
            }
            try await group.waitForAll()
        }
        written += ids.count * eventsPerAccount
        if (first / batch) % 10 == 0 { FileHandle.standardError.write(Data("\rwritten \(written) events".utf8)) }
    }
    try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: try store.logReader.lastPosition())
    FileHandle.standardError.write(Data("\n".utf8))
    await store.close()
}

/// Phase 2: rebuilds the details cache, then the payload-copy floor over the same log.
func rebuild(directory: String) async throws {
    let store = try await AccountStore(directory: directory, options: storeOptions())
    let events = try await store.logReader.lastPosition()
    let sampler = PeakSampler()
    let start = ContinuousClock.now
    try await store.rebuildProjection(AccountDetailsProjection.projectionName)
    let detailsSeconds = seconds(ContinuousClock.now - start)
    let heapPeak = sampler.stop()
    let detailsPeak = peakRSSMegabytes()
    // The floor: a new projection store builds from position 0 when it opens.
    let floorStart = ContinuousClock.now
    let floorStore = try ProjectionStore(path: directory + "/projections-floor", log: store.logReader, projections: [PayloadCopyProjection()])
    try await floorStore.waitUntilApplied("payload-copy", position: events)
    let floorSeconds = seconds(ContinuousClock.now - floorStart)
    await floorStore.close()
    await store.close()
    let result: [String: Double] = [
        "events": Double(events), "detailsSeconds": detailsSeconds, "detailsPeakMB": detailsPeak,
        "heapPeakMB": heapPeak, "floorSeconds": floorSeconds
    ]
    print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
}

func runPhase(_ arguments: [String]) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
    return data
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "write":
        try await write(directory: arguments[1], accounts: Int(arguments[2]) ?? 100_000, eventsPerAccount: Int(arguments[3]) ?? 10)
    case "rebuild":
        try await rebuild(directory: arguments[1])
    default:
        var accounts = 100_000
        var perAccount = 10
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--accounts": accounts = iterator.next().flatMap(Int.init) ?? accounts
            case "--events-per-account": perAccount = max(1, iterator.next().flatMap(Int.init) ?? perAccount)
            default:
                print("usage: store-rebuild [--accounts N] [--events-per-account K]")
                exit(64)
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-rebuild-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writeStart = ContinuousClock.now
        _ = try runPhase(["write", directory, "\(accounts)", "\(perAccount)"])
        let writeSeconds = seconds(ContinuousClock.now - writeStart)
        let result = try JSONDecoder().decode([String: Double].self, from: try runPhase(["rebuild", directory]))
        let events = result["events"] ?? 0
        let details = events / (result["detailsSeconds"] ?? 1)
        let floor = events / (result["floorSeconds"] ?? 1)
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.operatingSystemVersionString)")
        print(String(format: "wrote %.0f events for %d accounts in %.1f s (sealed, relaxed sync)", events, accounts, writeSeconds))
        print(
            String(
                format: "details-cache rebuild: %.2f s, %.0f events/s; peak anonymous (heap) RSS %.0f MB, peak RSS with the mapped log %.0f MB",
                result["detailsSeconds"] ?? 0, details, result["heapPeakMB"] ?? 0, result["detailsPeakMB"] ?? 0))
        print(String(format: "floor (payload copy, same machinery): %.2f s, %.0f events/s", result["floorSeconds"] ?? 0, floor))
        print(String(format: "details rebuild / floor: %.2f×", details / floor))
    }
} catch {
    FileHandle.standardError.write(Data("store-rebuild: \(error)\n".utf8))
    exit(1)
}
