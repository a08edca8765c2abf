//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
internal import LMDB

/// The runner's generation bookkeeping: starting rebuilds, handing over rebuilt generations,
/// following other processes' changes, and deleting the generations it replaced.
extension ProjectionStore {
    /// Creates the generations that `rebuild` asked for (replacing one already being built).
    /// A request whose generation could not be made stays asked for, and is tried again.
    func startRequestedRebuilds() throws {
        var requested = state.withLock { state in
            defer { state.requestedRebuilds.removeAll() }
            return state.requestedRebuilds
        }
        do {
            for name in order where requested.contains(name) {
                guard let projection = projections[name] else { continue }
                let (fresh, replaced) = try environment.write { txn in
                    let catalog = GenerationCatalog(transaction: txn, meta: meta)
                    // The generation being built now, by this process or another, is replaced.
                    var replaced: Generation?
                    if let previous = MetaKeys.u32(try txn.get(meta, key: MetaKeys.building(name))) {
                        replaced = try catalog.open(projection, number: previous)
                        try catalog.retire(name, replaced!)
                    }
                    let fresh = try catalog.create(projection)
                    try txn.put(meta, key: MetaKeys.building(name), value: MetaKeys.u32(fresh.number))
                    return (fresh, replaced)
                }
                requested.remove(name)
                state.withLock { state in
                    if let replaced { state.retired.append((name, replaced.keepingReaders(of: state.building[name]))) }
                    state.building[name] = fresh
                    // A rebuild is also how a stopped projection is restarted.
                    state.failures[name] = nil
                }
            }
        } catch {
            state.withLock { $0.requestedRebuilds.formUnion(requested) }
            throw error
        }
    }

    /// Deletes the databases of the generations this process replaced that no read is inside any
    /// more, so that their LMDB handles are closed and their slots free for the next rebuild (an
    /// environment holds a fixed number). One still read stays until a later round.
    func dropUnreadRetired() throws {
        let unread = state.withLock { state -> [(name: String, generation: Generation)] in
            var unread: [(name: String, generation: Generation)] = []
            state.retired.removeAll { entry in
                // Paired with the read's releasing decrement: its last access happened before.
                guard entry.generation.readers.count.load(ordering: .acquiring) == 0 else { return false }
                unread.append(entry)
                return true
            }
            return unread
        }
        guard !unread.isEmpty else { return }
        var deletedElsewhere: [Generation] = []
        do {
            try environment.write { txn in
                deletedElsewhere = []
                let catalog = GenerationCatalog(transaction: txn, meta: meta)
                for (name, generation) in unread where try !catalog.drop(name, generation) {
                    deletedElsewhere.append(generation)
                }
            }
        } catch {
            state.withLock { $0.retired += unread }
            throw error
        }
        // Deleted by another process already (at its open, or as the process that replaced it):
        // only this process's handles are left to close.
        for generation in deletedElsewhere {
            for database in generation.databases.values { environment.closeDatabase(database) }
        }
    }

    /// Hands reads over to a rebuilt generation once it has reached the serving one or, when the
    /// serving one has applied records the log no longer holds (`logHead`, see
    /// `logHeadBehindServing`), the end of the log: waiting for the lost records would never end.
    func takeOverIfCaughtUp(_ name: String, logHead: UInt64?) throws {
        let pair = state.withLock { state -> (Generation, Generation)? in
            guard let active = state.active[name], let building = state.building[name],
                building.checkpoint >= min(active.checkpoint, logHead ?? .max)
            else { return nil }
            return (active, building)
        }
        guard let (old, new) = pair else { return }
        let tookOver = try environment.write { txn -> Bool? in
            // Another process may have taken over (or replaced the rebuild) already.
            guard MetaKeys.u32(try txn.get(meta, key: MetaKeys.active(name))) == old.number,
                MetaKeys.u32(try txn.get(meta, key: MetaKeys.building(name))) == new.number
            else { return false }
            // A generation halfway through its stream-by-stream pass has not caught up, whatever
            // its checkpoint (still 0) says: it may only serve once the pass is over. (This
            // process's copy of the serving checkpoint may be 0 and stale while another process
            // advances it.)
            guard try txn.get(meta, key: MetaKeys.streamBuild(name, new.number)) == nil else { return nil }
            let catalog = GenerationCatalog(transaction: txn, meta: meta)
            try txn.put(meta, key: MetaKeys.active(name), value: MetaKeys.u32(new.number))
            _ = try txn.delete(meta, key: MetaKeys.building(name))
            try catalog.retire(name, old)
            return true
        }
        guard let tookOver else { return }
        guard tookOver else {
            try refreshGenerations()
            return
        }
        let (done, ready) = state.withLock { state in
            state.retired.append((name, old.keepingReaders(of: state.active[name])))
            state.active[name] = new
            return (Self.endRebuild(name, &state), takeReadyWaiters(&state))
        }
        for waiter in done { waiter.resume() }
        for waiter in ready { waiter.resume() }
    }

    /// Ends the projection's rebuild in `state` (its generation serves now): no generation being
    /// built, no progress callback; returns the rebuild's waiters, to be resumed.
    private static func endRebuild(_ name: String, _ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        state.building[name] = nil
        state.progress[name] = nil
        return takeRebuildWaiters(of: name, &state)
    }

    /// Re-reads which generations serve and build each projection, as another process may have
    /// changed them (a rebuild that took over), and opens the ones this process has not seen yet.
    /// A rebuild this process waited for counts as done when its generation (or a newer one) serves.
    func refreshGenerations() throws {
        let current = try environment.write { txn -> [(String, Generation, Generation?)] in
            let catalog = GenerationCatalog(transaction: txn, meta: meta)
            return try order.compactMap { name in
                guard let projection = projections[name], let active = MetaKeys.u32(try txn.get(meta, key: MetaKeys.active(name))) else {
                    return nil
                }
                let building = try MetaKeys.u32(try txn.get(meta, key: MetaKeys.building(name))).map { try catalog.open(projection, number: $0) }
                return (name, try catalog.open(projection, number: active), building)
            }
        }
        let (done, ready) = state.withLock { state in
            var done: [CheckedContinuation<Void, any Error>] = []
            for (name, active, building) in current {
                let held = [state.active[name], state.building[name]].compactMap { $0 }
                let replaced = state.active[name]?.number != active.number
                state.active[name] = active.keepingReaders(of: held.first { $0.number == active.number })
                if replaced && building == nil {
                    // The rebuild this process started (or one that superseded it) serves now.
                    done += Self.endRebuild(name, &state)
                } else if state.building[name]?.number != building?.number {
                    state.building[name] = building
                }
                // Generations another process replaced: this process's handles to them are closed
                // once no read of it is inside them.
                for old in held where old.number != active.number && old.number != building?.number {
                    state.retired.append((name, old))
                }
            }
            return (done, takeReadyWaiters(&state))
        }
        for waiter in done { waiter.resume() }
        for waiter in ready { waiter.resume() }
    }
}
