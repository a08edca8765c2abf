//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountStorePostgres
import ArgumentParser
import Foundation
import Metrics
import MetricsTestKit
import SpeziAccountStore
import Synchronization

/// Kills a store workload with SIGKILL at random moments, again and again, and checks after each
/// restart that nothing acknowledged was lost and that the projections equal a replay of the log.
@main
struct CrashTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-test",
        abstract: "SIGKILL a store workload at random moments and check the store after every restart.",
        discussion: """
            Each round starts a child process that signs up, modifies and deletes accounts from several \
            tasks (durable appends), kills it after a random 20–250 ms (in every third round counted from \
            its first acknowledged operation; with --power-loss, also undoes \
            every write not yet flushed to disk), reopens the store and checks: \
            every acknowledged operation is in the log, verify passes, the details cache equals the fold \
            of every stream, and no user id belongs to two accounts. At the end the cache is rebuilt from \
            position 0 and compared once more. With --processes N, N such children share the store (and \
            with --rebuilder one more rebuilds the cache over and over), each killed at its own moment \
            after 100–600 ms (in every third round counted from the first acknowledged operation). --preload N writes about N records before the first round, so that the \
            rebuilder, with --rebuild-chunk 8192 or more, reads chunks in two parts at once (on two \
            threads) during the rounds; every other round starts its kill clock once it has written \
            one. With --power-loss the undo's effect is measured on the files' bytes, and a run whose \
            cuts never changed a byte fails. --control-no-flush is the control: its store does not \
            flush, and it passes only if the check reports acknowledged operations lost. A step of a \
            round that makes no progress for --progress-limit seconds (a child that acknowledges \
            nothing, a check that waits) stops the run with an error naming it. Exit status 0: \
            nothing lost, no mismatch; 1 otherwise; 2 when a round stopped making progress.
            """,
        subcommands: [Run.self, Child.self, RebuildChild.self],
        defaultSubcommand: Run.self
    )

    /// Makes `postgres://` logs (`--log`) openable, then runs the command.
    static func main() async {
        PostgresLogSupport.register()
        await main(nil)
    }

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the crash rounds (the default).")

        @Option(help: "How many times to kill the workload.")
        var crashes = 200

        @Option(help: "Concurrent writer tasks in the child.")
        var writers = 4

        @Option(help: "Seed of the random kill delays and workloads.")
        var seed: UInt64 = 0xC0FFEE

        @Option(help: "The store directory (default: a new temporary one, removed afterwards).")
        var store: String?

        @Option(help: "Writer processes on the one store, each killed at its own random moment.")
        var processes = 1

        @Flag(help: "Also run a process that rebuilds the details cache over and over (killed with the writers).")
        var rebuilder = false

        @Option(help: "Records per transaction of the rebuilding process (from 8192 on, each is read in two parts at once).")
        var rebuildChunk = 512

        @Option(help: "Records to write (unchecked signups and changes) before the first round.")
        var preload = 0

        @Flag(
            help: ArgumentHelp(
                "Cut the power instead of only killing the process.",
                discussion:
                    "Runs the child under Tools/io-fault-shim, which journals every write to the log, the projections and the key vault that was not yet flushed; after each kill those writes are undone, as a power loss would. Needs a C compiler (cc)."
            ))
        var powerLoss = false

        @Flag(
            help: ArgumentHelp(
                "The control run: cut the power under a store that does not flush, and expect losses.",
                discussion:
                    "As --power-loss, but the workload's store appends without flushing (sync: .relaxed), and every round waits for an acknowledged operation before its kill clock starts. Each cut then takes acknowledged operations with it, and the run passes (exit status 0) only if the check reports them lost: it shows that the check can see lost writes. Mismatches between the details cache and the log are expected here and do not fail it."
            ))
        var controlNoFlush = false

        @Option(
            help:
                "Seconds a step of a round may go without progress (an acknowledged operation, a record checked) before the run stops with exit status 2."
        )
        var progressLimit = 60

        @Flag(help: .hidden)
        var stallingChildren = false

        func run() async throws {
            let directory = store ?? FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString)").path
            defer { if store == nil { try? FileManager.default.removeItem(atPath: directory) } }
            guard processes >= 1 else { throw ValidationError("--processes must be at least 1") }
            guard rebuildChunk >= 1, preload >= 0 else { throw ValidationError("--rebuild-chunk must be at least 1, --preload at least 0") }
            guard progressLimit >= 1 else { throw ValidationError("--progress-limit must be at least 1") }
            var harness = try CrashHarness(
                directory: directory, writers: writers, seed: seed, powerLoss: powerLoss, controlNoFlush: controlNoFlush, processes: processes,
                rebuilder: rebuilder, progressLimit: .seconds(progressLimit))
            harness.rebuildChunk = rebuildChunk
            harness.stallingChildren = stallingChildren
            if preload > 0 {
                print("preloading \(preload) records")
                try await harness.preload(records: preload)
            }
            let summary = try await harness.run(crashes: crashes) { round, summary in
                if round % 10 == 0 || round == crashes {
                    print("round \(round)/\(crashes): \(summary.acknowledged) acknowledged, \(summary.lost) lost, \(summary.mismatches) mismatches")
                }
            }
            print(summary.report)
            if let failure = summary.failure {
                print("failed: \(failure)")
                throw ExitCode(1)
            }
        }
    }

    struct Child: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "child", abstract: "The workload that gets killed (internal).",
            shouldDisplay: false)

        @Option var store: String
        @Option var acks: String
        @Option var seed: UInt64
        @Option var writers: Int
        @Option var slot = 0
        @Option var slots = 1
        /// A shared log (a `postgres://` URL): the store folder keeps this node's projections only.
        @Option var log: String?
        /// The control run's store: appends are not flushed.
        @Flag var noFlush = false
        /// Test only: stop before opening the store, as a child that hangs would.
        @Flag var stall = false

        func run() async throws {
            exitWhenOrphaned()
            if stall { while true { try await Task.sleep(for: .seconds(3_600)) } }
            do {
                try await ChildWorkload(
                    directory: store, ackPath: acks, seed: seed, writers: writers, slot: slot, slots: slots, log: log,
                    sync: noFlush ? .relaxed : .durable
                ).run()
            } catch {
                FileHandle.standardError.write(Data("crash-test child: \(error)\n".utf8))
                throw ExitCode(3)
            }
        }
    }

    struct RebuildChild: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rebuild-child", abstract: "Rebuilds the details cache until killed (internal).",
            shouldDisplay: false)

        @Option var store: String
        @Option var chunk = 512

        func run() async throws {
            exitWhenOrphaned()
            do {
                // The chunks read in two parts are counted through the store's metrics, and one
                // line per chunk goes to a file the harness reads: evidence that such chunks ran between kills.
                let metrics = TestMetrics()
                MetricsSystem.bootstrap(metrics)
                let chunks = try AckFile(path: store + "/" + CrashHarness.twoPartChunksFile)
                let opened = try await openStore(store, catchUp: chunk)
                let seen = Mutex<Int64>(0)
                let report: @Sendable (UInt64, UInt64) -> Void = { _, _ in
                    let total = metrics.counters(label: "projection_chunks_read_in_two_parts").reduce(0) { $0 + $1.totalValue }
                    let new = seen.withLock { seen in
                        defer { seen = max(seen, total) }
                        return max(0, total - seen)
                    }
                    for _ in 0..<new { chunks.write("chunk") }
                }
                while true { try await opened.projections.rebuild(AccountDetailsProjection.projectionName, progress: report) }
            } catch {
                FileHandle.standardError.write(Data("crash-test rebuild-child: \(error)\n".utf8))
                throw ExitCode(3)
            }
        }
    }
}

/// A child whose harness died (killed, say, rather than finishing its rounds) ends too, instead of
/// writing on for ever: it watches for its parent to change.
func exitWhenOrphaned() {
    let parent = getppid()
    Thread.detachNewThread {
        while getppid() == parent { usleep(100_000) }
        exit(0)
    }
}
