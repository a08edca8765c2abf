//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Spezi
import SpeziAccount

/// An `AccountStorageProvider` on the event log: the values of the keys an account service does
/// not store itself become `external.details-modified` / `external.details-erased` events in the
/// account's stream, and reads come from the external-storage view (``ExternalDetailsProjection``).
///
/// ```swift
/// let store = try await AccountStore(directory: path)
/// AccountConfiguration(
///     service: EventSourcedAccountService(store: store, supportedKeys: .exactly(serviceKeys)),
///     storageProvider: EventSourcedStorageProvider(store: store),
///     configuration: [.requires(\.userId), .collects(\.biography)]
/// )
/// ```
///
/// Writes are read-your-writes. `load` answers from the view at once when it has caught up with
/// the log, and otherwise returns `nil` and delivers the values through
/// `ExternalAccountStorage.notifyAboutUpdatedDetails` as soon as it has. Changes that other
/// writers (another process, `accountctl`) append to the log reach
/// `ExternalAccountStorage.updatedDetails` the same way.
public actor EventSourcedStorageProvider: AccountStorageProvider {
    /// The store whose log holds the values.
    public nonisolated let store: AccountStore
    /// Marks this instance's own events, so that its feed does not echo them back.
    private nonisolated let origin = UUID.random().uuidString.lowercased()
    /// How long `load` waits for the view to catch up before answering `nil`.
    private let loadPatience: Duration

    @Dependency(ExternalAccountStorage.self) private var externalStorage
    /// For the app's keys, so that values fed from the log arrive typed.
    @Dependency(Account.self) private var account: Account?
    private var feedTask: Task<Void, Never>?

    /// A provider writing to `store`'s log.
    ///
    /// - Parameters:
    ///   - store: the store whose log keeps the values, as `external.*` events in each account's stream.
    ///   - loadPatience: how long `load` may wait for the view to catch up with the log before it
    ///     answers `nil` and delivers the values later. Zero (the default): `load` never waits, as
    ///     the seeds ask ("must return instantly"); it answers from the view when the view holds
    ///     the log's head, else `nil`.
    public init(store: AccountStore, loadPatience: Duration = .zero) {
        self.store = store
        self.loadPatience = loadPatience
    }

    /// Starts feeding `ExternalAccountStorage.updatedDetails` from the log.
    ///
    /// - Throws: The log's `EventLogError` when its last position cannot be read; nothing is fed then.
    public func configure() async throws {
        let start = try await store.log.lastPosition()
        let store = store
        let storage = externalStorage
        let origin = origin
        let keys = account?.configuration.keys ?? []
        feedTask = Task.detached {
            do {
                for try await record in store.log.subscribeRecords(after: start) where record.type.hasPrefix("external.") {
                    guard record.metadata.extra[Self.originKey] != origin else { continue }
                    try await store.projections.waitUntilApplied(ExternalDetailsProjection.projectionName, position: record.position)
                    let values = try store.externalValues(of: record.streamID)
                    storage.notifyAboutUpdatedDetails(for: record.streamID, try store.details(perKey: values, keys: keys))
                }
            } catch is CancellationError {
                // The provider was shut down.
            } catch {
                // The log closed or the view failed: the feed ends (the view's status says more).
                AccountStore.logger.error("the external-storage feed stopped", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Appends the new account's external values.
    ///
    /// - Parameters:
    ///   - accountId: The new account.
    ///   - details: The values of the keys the service does not store; nothing is appended when empty.
    /// - Throws: An encoding error for a value that cannot be encoded; the log's `EventLogError` or
    ///   ``KeyVaultError`` when the append fails; or `ProjectionError` when the view does not apply it
    ///   in time.
    public func create(_ accountId: String, _ details: AccountDetails) async throws {
        guard !details.isEmpty else { return }
        try await append(.externalDetailsModified(modified: try details.encodedPerKey(), removed: []), to: accountId)
    }

    /// Returns the account's values for `keys` from the view, or `nil` when the view has not caught up yet (they arrive later through external storage).
    ///
    /// - Parameters:
    ///   - accountId: The account whose values to read.
    ///   - keys: The keys the values are typed with.
    /// - Returns: The account's external values, or nil when the view has not caught up with the log
    ///   (within `loadPatience`).
    /// - Throws: The log's `EventLogError` when its last position cannot be read, `ProjectionError`
    ///   when the view has failed or is closed, or an error decoding the stored values.
    public func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails? {
        let head = try await store.log.lastPosition()
        let name = ExternalDetailsProjection.projectionName
        let caughtUp: Bool
        if loadPatience == .zero {
            caughtUp = (try await store.projections.status().first { $0.name == name }?.checkpoint ?? 0) >= head
        } else {
            caughtUp = try await catchUp(name, to: head)
        }
        guard caughtUp else {
            let store = store
            let storage = externalStorage
            Task.detached {
                do {
                    try await store.projections.waitUntilApplied(name, position: head)
                    let details = try store.details(perKey: try store.externalValues(of: accountId), keys: keys)
                    storage.notifyAboutUpdatedDetails(for: accountId, details)
                } catch {
                    AccountStore.logger.error(
                        "external values that were not ready at load could not be delivered later",
                        metadata: ["account": "\(accountId)", "error": "\(error)"])
                }
            }
            return nil
        }
        return try store.details(perKey: try store.externalValues(of: accountId), keys: keys)
    }

    /// Whether the view applies `head` within `loadPatience`.
    private func catchUp(_ name: String, to head: UInt64) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { [store] in
                try await store.projections.waitUntilApplied(name, position: head)
                return true
            }
            group.addTask { [loadPatience] in
                try? await Task.sleep(for: loadPatience)
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Appends the changed and removed external values.
    ///
    /// - Parameters:
    ///   - accountId: The account to change.
    ///   - modifications: The external values to set and the keys to remove; nothing is appended when
    ///     empty.
    /// - Throws: An encoding error for a value that cannot be encoded; the log's `EventLogError` or
    ///   ``KeyVaultError`` when the append fails; or `ProjectionError` when the view does not apply it
    ///   in time.
    public func modify(_ accountId: String, _ modifications: AccountModifications) async throws {
        guard !modifications.isEmpty else { return }
        try await append(
            .externalDetailsModified(
                modified: try modifications.modifiedDetails.encodedPerKey(),
                removed: modifications.removedKeys.map { $0.identifier }), to: accountId)
    }

    /// Nothing to clear: the view is the store's, not a per-session cache.
    ///
    /// - Parameter accountId: The account that was signed out; ignored.
    public func disassociate(_ accountId: String) async {}

    /// Appends the erasure of the account's external values.
    ///
    /// - Parameter accountId: The account whose external values to erase.
    /// - Throws: The log's `EventLogError` when the append fails, or `ProjectionError` when the view
    ///   does not apply it in time.
    public func delete(_ accountId: String) async throws {
        try await append(.externalDetailsErased, to: accountId)
    }

    private func append(_ event: AccountEvent, to accountId: String) async throws {
        let metadata = EventMetadata(actor: "storage-provider", extra: [Self.originKey: origin])
        let result = try await store.accounts.append([event], to: accountId, expectedVersion: .any, metadata: metadata)
        try await store.projections.waitUntilApplied(ExternalDetailsProjection.projectionName, position: result.positions.upperBound)
    }

    static let originKey = "origin"
}

extension AccountStore {
    /// Typed details from values by key identifier, limited to `keys` when given; keys neither the
    /// registry nor `keys` know are kept as unknown values.
    func details(perKey values: EncodedAccountValues, keys: [any AccountKey.Type]? = nil) throws -> AccountDetails {
        guard let keys else { return try AccountDetails(perKey: values, registry: registry) }
        let wanted = Set(keys.map { $0.identifier })
        return try AccountDetails(perKey: values.filter { wanted.contains($0.key) }, registry: registry.merging(AccountKeyRegistry(keys)))
    }
}
