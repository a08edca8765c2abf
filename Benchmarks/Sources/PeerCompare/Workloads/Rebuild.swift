//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import Foundation
import Projections
import SpeziAccountStore

/// The details table: built from the data set's 1 M events, then read one account at a time.
enum DetailsWorkloads {
    static func projectionsPath(_ directory: URL) -> URL { directory.appendingPathComponent("projections") }

    /// 5. Projection rebuild. The log: a `ProjectionStore` with the store's `AccountDetailsProjection`
    /// opened on the log (it builds its first generation; timed as a note), then
    /// `ProjectionStore.rebuild` (blue/green, the figure). Raw LMDB: one pass over the records that
    /// folds each into a second database (get, decode `AccountState`, apply, encode, put), as many
    /// events per transaction as a catching-up projection takes (65,536), MDB_NOMETASYNC (as the
    /// projections). SQLite: the same fold into the accounts table, as many events per
    /// transaction, synchronous=NORMAL.
    static func rebuild(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        var watch = Stopwatch()
        var notes: [String: Double] = [:]
        var folded = 0
        switch backEnd {
        case .postgres, .rawPostgres: throw ChildError.notEmbedded(backEnd)
        case .log:
            let log = try BulkWorkloads.openLog(directory)
            let last = try log.lastPosition()
            var first = Stopwatch()
            let store = try await first.timeAsync {
                let store = try ProjectionStore(
                    path: projectionsPath(directory).path, log: log, projections: [AccountDetailsProjection()], options: buildOptions)
                try await store.waitUntilApplied(AccountDetailsProjection.projectionName, position: last)
                return store
            }
            notes["initialBuildSeconds"] = first.seconds
            try await watch.timeAsync { try await store.rebuild(AccountDetailsProjection.projectionName) }
            folded = Int(last)
            await store.close()
            await log.close()
        case .raw:
            let raw = try RawLMDB(directory: BulkWorkloads.rawPath(directory), sync: .lastCommitMayRollBack)
            folded = try watch.time { try fold(raw, batchSize: ProjectionStoreOptions().catchUpBatchSize) }
        case .sqlite:
            let sqlite = try SQLitePeer(directory: BulkWorkloads.sqlitePath(directory), sync: .normal)
            folded = try watch.time { try sqlite.rebuildAccounts(batchSize: ProjectionStoreOptions().catchUpBatchSize) }
        }
        precondition(folded == scale.records, "\(backEnd.title) folded \(folded) of \(scale.records) events")
        var figure = Figure(
            "rebuild", "rebuild of the details table, \(count(scale.accounts)) accounts / \(count(scale.records)) events",
            backEnd, operations: folded, seconds: watch.seconds)
        figure.notes = notes
        return [figure]
    }

    /// A first build of 10 M events takes longer than a read-your-writes wait may (30 s by default).
    static var buildOptions: ProjectionStoreOptions {
        var options = ProjectionStoreOptions()
        options.readYourWritesTimeout = .seconds(3_600)
        return options
    }

    /// The raw loop's fold: records → states, in batches.
    static func fold(_ raw: RawLMDB, batchSize: Int) throws -> Int {
        var after: UInt64 = 0
        var folded = 0
        while true {
            let count = try raw.write { txn in
                try raw.forEachRecord(txn, after: after, limit: batchSize) { position, bytes in
                    let view = RawFrame.View(bytes)
                    try foldRecord(raw, txn, stream: view.stream, type: view.type, payload: view.payload, date: view.date)
                    after = position
                }
            }
            folded += count
            if count < batchSize { return folded }
        }
    }

    /// Folds one event into its account's state in `raw`'s states database.
    static func foldRecord(
        _ raw: RawLMDB, _ txn: OpaquePointer, stream: UnsafeRawBufferPointer, type: String, payload: UnsafeRawBufferPointer, date: Date
    ) throws {
        let event = try AccountEvent.decode(type: type, payload: payload)
        let previous = try raw.get(txn, raw.states, key: stream).map { try AccountState(encoded: [UInt8]($0)) }
        let accountId = String(decoding: stream, as: UTF8.self)
        if let next = AccountState.applying(event, to: previous, accountId: accountId, version: (previous?.version ?? 0) + 1, at: date) {
            try next.encoded().withUnsafeBytes { try raw.put(txn, raw.states, key: stream, value: $0) }
        }
    }

    /// 6. Point reads of one account's current details from the table, uniformly random accounts
    /// (fixed seed), each timed on its own. The log: `AccountStore.cachedState(of:)` on an
    /// `AccountStore` opened on the data set (and, as a second row, `AccountStore.details(of:)`,
    /// which also turns the state into typed `AccountDetails`); raw LMDB: a read transaction and
    /// one get; SQLite: a prepared SELECT through the pool. Every side decodes an `AccountState`.
    static func point(_ scale: Scale, _ backEnd: BackEnd, in directory: URL) async throws -> [Figure] {
        var generator = SplitMix64(seed: 0x9017_0000)
        let ids = (0..<(scale.pointReads + 1_000)).map { _ in Dataset.accountId(Int(generator.next() % UInt64(scale.accounts))) }
        var samples: [UInt64] = []
        var details: [UInt64] = []
        samples.reserveCapacity(ids.count)
        func timed(_ read: (String) throws -> AccountState?) throws {
            for (index, id) in ids.enumerated() {
                let start = nowNanos()
                let state = try read(id)
                let elapsed = nowNanos() &- start
                precondition(state?.accountId == id, "no state for \(id)")
                if index >= 1_000 { samples.append(elapsed) }  // the first 1,000 warm up
            }
        }
        switch backEnd {
        case .postgres, .rawPostgres: throw ChildError.notEmbedded(backEnd)
        case .log:
            var options = AccountStoreOptions()
            options.sync = .relaxed
            let store = try await AccountStore(directory: directory.path, options: options)
            try timed { try store.cachedState(of: $0) }
            for (index, id) in ids.enumerated() {
                let start = nowNanos()
                let found = try store.details(of: id)
                let elapsed = nowNanos() &- start
                precondition(found?.accountId == id)
                if index >= 1_000 { details.append(elapsed) }
            }
            await store.close()
        case .raw:
            let raw = try RawLMDB(directory: BulkWorkloads.rawPath(directory), sync: .relaxed)
            try timed { id in
                try raw.read { txn in
                    var key = Array(id.utf8)
                    return try key.withUnsafeMutableBytes { key in
                        try raw.get(txn, raw.states, key: UnsafeRawBufferPointer(key)).map { try AccountState(encoded: [UInt8]($0)) }
                    }
                }
            }
        case .sqlite:
            let sqlite = try SQLitePeer(directory: BulkWorkloads.sqlitePath(directory), sync: .normal)
            try timed { try sqlite.state(of: $0) }
        }
        var figures = [figure("point", "point read of one account's details", backEnd, samples)]
        if !details.isEmpty {
            figures.append(figure("point-details", "point read via AccountStore.details(of:)", backEnd, details))
        }
        return figures
    }

    private static func figure(_ workload: String, _ title: String, _ backEnd: BackEnd, _ samples: [UInt64]) -> Figure {
        var figure = Figure(workload, title, backEnd, operations: samples.count, seconds: Double(samples.reduce(0, &+)) / 1e9)
        figure.latency = Percentiles(nanos: samples)
        return figure
    }
}
