//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs this executable again with `arguments` and waits for it; returns its exit status and its
/// peak resident set in MiB, from the `rusage` that `wait4` reports for it alone.
func runChild(_ arguments: [String]) throws -> (status: Int32, maxRSSMiB: Double) {
    let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for argument in argv { free(argument) }
        for variable in environment { free(variable) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, nil, nil, argv, environment)
    guard spawned == 0 else { throw ChildError(reason: "posix_spawn failed: \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
        guard errno == EINTR else { throw ChildError(reason: "wait4 failed: \(String(cString: strerror(errno)))") }
    }
    // ru_maxrss is in KiB on Linux. Exited normally: the low 7 bits are 0 and the code is in bits 8-15.
    let exitCode = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return (exitCode, Double(usage.ru_maxrss) / 1024)
}

struct ChildError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }

    /// An embedded workload asked of a PostgreSQL back end (those run in `PostgresWorkloads`).
    static func notEmbedded(_ backEnd: BackEnd) -> ChildError {
        ChildError(reason: "\(backEnd.title) runs only the postgres workload")
    }
}

/// In a child: runs one workload (on one back end, or on all three for `single`), samples the
/// anonymous memory meanwhile, and writes the figures as JSON to `result`.
func runAsChild(_ child: (workload: Options.Workload, backEnd: BackEnd?, directory: URL, result: URL), scale: Scale) async throws {
    let sampler = AnonymousMemorySampler()
    let directory = child.directory
    var figures: [Figure]
    if child.workload == .single {
        figures = try await AppendWorkloads.single(scale, in: directory)
    } else if child.workload == .postgres {
        figures = try await PostgresWorkloads.run(scale, in: directory)
    } else {
        guard let backEnd = child.backEnd else { throw ChildError(reason: "--child \(child.workload) needs --backend") }
        switch child.workload {
        case .single, .postgres: figures = []
        case .scale: figures = try await ScaleWorkload.run(scale, backEnd, in: directory)
        case .group: figures = try await AppendWorkloads.group(scale, backEnd, in: directory)
        case .bulk: figures = try await BulkWorkloads.bulk(scale, backEnd, in: directory)
        case .replay: figures = try await BulkWorkloads.replay(scale, backEnd, in: directory)
        case .rebuild: figures = try await DetailsWorkloads.rebuild(scale, backEnd, in: directory)
        case .point: figures = try await DetailsWorkloads.point(scale, backEnd, in: directory)
        case .mix: figures = try await MixWorkload.mix(scale, backEnd, in: directory)
        }
    }
    let peak = sampler.stop()
    for index in figures.indices { figures[index].peakAnonMiB = peak }
    try JSONEncoder().encode(figures).write(to: child.result)
}
