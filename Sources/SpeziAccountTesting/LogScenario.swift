//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

@_exported import EventLogConformance
import EventLogProtocol
import Foundation
import Projections
import SpeziAccount
import SpeziAccountStore

/// An event of one account, for building logs in tests.
public struct StreamEvent: Sendable {
    /// The account (stream) the event belongs to.
    public let accountId: String
    /// The event.
    public let event: AccountEvent
    /// Who appended it, if known.
    public let actor: String?

    /// An event of `accountId`.
    ///
    /// - Parameters:
    ///   - accountId: the account (stream) the event belongs to.
    ///   - event: the event.
    ///   - actor: who appended it, or nil.
    public init(_ accountId: String, _ event: AccountEvent, actor: String? = nil) {
        self.accountId = accountId
        self.event = event
        self.actor = actor
    }
}

/// What a `when` step produced: the events it appended, or the error it threw (and then nothing appended).
public struct Outcome: Sendable {
    /// The appended events, decoded, in log order, with their accounts.
    public let events: [StreamEvent]
    /// The error the operation threw, if any.
    public let error: (any Error)?

    /// The appended events' type names.
    public var types: [String] { events.map(\.event.typeName) }
}

/// A store on real LMDB files in a temporary directory, with a deterministic clock and account ids
/// and cheap password hashing: the Linux counterpart of the seed's XCTSpeziAccount.
///
/// ```swift
/// let scenario = try await LogScenario()
/// try await scenario.given([StreamEvent("a1", .accountCreated(userId: "a@b.c", passwordHash: nil, isAnonymous: false, values: [:]))])
/// let outcome = await scenario.when { try await $0.delete("a1") }
/// #expect(outcome.types == ["account.deleted"])
/// await scenario.remove()
/// ```
public final class LogScenario: Sendable {
    /// The temporary directory (removed by ``remove()``).
    public let directory: URL
    /// The store's clock: it moves only when told.
    public let clock: TestClock
    /// The account ids new accounts get.
    public let ids: SequentialIDs
    /// The store under test.
    public let store: AccountStore

    /// Opens a new store in a new temporary directory.
    ///
    /// - Parameters:
    ///   - values: the app's key configuration for the store's validation.
    ///   - configure: further changes to the options (the clock, ids and hashing are already set).
    /// - Throws: the store's error when it cannot be opened in the new directory.
    public convenience init(values: AccountValueConfiguration = .default, configure: (inout AccountStoreOptions) -> Void = { _ in }) async throws {
        try await self.init(recorded: nil, vault: nil, values: values, configure: configure)
    }

    /// Opens a store built from a recorded log: an `accountctl export` (JSON Lines), with a copy of
    /// the recorded store's key vault (`export --vault-copy`) when its payloads are sealed. The
    /// import checks every chain hash; the store then folds the recorded history with `configure`'s
    /// options, so a test can replay last month's production log through a new key set's upcasters
    /// (`AccountStoreOptions.evolution`) before it ships.
    ///
    /// - Parameters:
    ///   - recorded: the export to start from.
    ///   - vault: the recorded store's vault file, for sealed exports.
    ///   - values: the app's key configuration for the store's validation.
    ///   - configure: further changes to the options (the clock, ids and hashing are already set).
    /// - Throws: the import's error when the export cannot be rebuilt (a chain hash that does not
    ///   match, sealed payloads without `vault`), or the store's error when it cannot be opened.
    public convenience init(
        recorded: URL, vault: URL? = nil, values: AccountValueConfiguration = .default,
        configure: (inout AccountStoreOptions) -> Void = { _ in }
    ) async throws {
        try await self.init(recorded: .some(recorded), vault: vault, values: values, configure: configure)
    }

    private init(
        recorded: URL?, vault: URL?, values: AccountValueConfiguration, configure: (inout AccountStoreOptions) -> Void
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("spezi-account-testing-\(UUID().uuidString)")
        if let recorded {
            _ = try await LogTransfer.importLog(from: recorded, into: directory.path, vault: vault)
        }
        let clock = TestClock()
        let ids = SequentialIDs()
        var options = AccountStoreOptions()
        options.sync = .relaxed
        options.passwordParameters = ScryptParameters(logN: 4, blockSize: 1, parallelism: 1)
        options.allowWeakPasswordParameters = true
        options.clock = { clock.now() }
        options.makeAccountId = { ids.make() }
        configure(&options)
        self.clock = clock
        self.ids = ids
        store = try await AccountStore(directory: directory.path, values: values, options: options)
        // A recorded history is folded before the test looks at it.
        if recorded != nil { try await store.waitUntilCaughtUp() }
    }

    /// Closes the store and deletes the directory.
    public func remove() async {
        await store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Appends events straight to the log (as an older version of the app, or another writer,
    /// would have), then waits until the details cache has applied them.
    ///
    /// - Parameter events: the events to append, in order, with no version check.
    /// - Throws: the log's error when an append fails, or the projections' error when the details
    ///   cache stops or does not catch up in time.
    public func given(_ events: [StreamEvent]) async throws {
        for event in events {
            try await store.accounts.append(
                [event.event], to: event.accountId, expectedVersion: .any,
                metadata: EventMetadata(actor: event.actor))
        }
        try await store.projections.waitUntilApplied(AccountDetailsProjection.projectionName, position: try await store.log.lastPosition())
    }

    /// Runs an operation on the store and reports what it appended, or the error it threw.
    ///
    /// - Parameter operation: the step under test.
    /// - Returns: the events the step appended, and its error if it threw.
    public func when(_ operation: (AccountStore) async throws -> Void) async -> Outcome {
        let before = (try? await store.log.lastPosition()) ?? 0
        var failure: (any Error)?
        do { try await operation(store) } catch { failure = error }
        let events = (try? await appended(after: before)) ?? []
        return Outcome(events: events, error: failure)
    }

    /// The events appended after `position`, decoded, in log order.
    ///
    /// - Parameter position: the last position not to include.
    /// - Returns: the events after it, decoded, with their accounts and actors.
    /// - Throws: the log's error when a read fails, or the store's error when a record does not decode.
    public func appended(after position: UInt64) async throws -> [StreamEvent] {
        try await store.log.read(from: position + 1, limit: .max).map { record in
            StreamEvent(record.streamID, try store.accounts.event(from: record), actor: record.metadata.actor)
        }
    }

    /// Replays the whole log into `projection` in a fresh projection store beside the store's own,
    /// and hands its state to `inspect` once it has caught up with the log.
    ///
    /// - Parameters:
    ///   - projection: the projection to build from the whole log.
    ///   - inspect: reads the projection's state once it has caught up.
    /// - Returns: what `inspect` returns.
    /// - Throws: `inspect`'s error, or the projections' error when the replay cannot be opened, stops on
    ///   an error, or does not catch up in time.
    public func replay<T>(into projection: some Projection, _ inspect: (ProjectionState) throws -> T) async throws -> T {
        let path = directory.appendingPathComponent("replay-\(UUID().uuidString)").path
        let replay = try ProjectionStore(path: path, log: store.log, projections: [projection])
        do {
            try await replay.waitUntilApplied(projection.name, position: try await store.log.lastPosition())
            let result = try replay.read(projection.name, inspect)
            await replay.close()
            return result
        } catch {
            await replay.close()
            throw error
        }
    }
}
