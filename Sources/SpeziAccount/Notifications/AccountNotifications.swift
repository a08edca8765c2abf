//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi

/// A Standard that wants to hear account events first (before storage providers and subscribers).
public protocol AccountNotifyConstraint: Standard {
    /// Handles an account event.
    ///
    /// - Parameter event: the event, before the storage provider and the subscribers hear it.
    func respondToEvent(_ event: AccountNotifications.Event) async
}

/// Distributes account events: first to the Standard (if it conforms to AccountNotifyConstraint),
/// then to the configured AccountStorageProvider (`delete` for Event/deletingAccount(_:), whose
/// error aborts the deletion; `disassociate` for Event/disassociatingAccount(_:)), then to every
/// subscriber of events.
// Unchecked Sendable: its subscribers are held in a `SpeziLock`; its dependencies are filled by the runtime before `configure()`.
public final class AccountNotifications: Module, DefaultInitializable, @unchecked Sendable {
    /// An account event.
    public enum Event: Sendable, Equatable {
        /// The account with this id is about to be deleted.
        case deletingAccount(String)
        /// An account was associated (signed in).
        case associatedAccount(AccountDetails)
        /// The details of the associated account changed (old, new).
        case detailsChanged(AccountDetails, AccountDetails)
        /// The account is being disassociated (logout or after deletion).
        case disassociatingAccount(AccountDetails)
    }

    // The wrappers are assigned once in init; the runtime fills their locked boxes.
    @StandardActor private var standard: any Standard
    @Dependency(ExternalAccountStorage.self) private var externalStorage: ExternalAccountStorage?
    private let subscribers = SpeziLock<[UUID: AsyncStream<Event>.Continuation]>([:])

    /// Creates the module (usually done by AccountConfiguration).
    public init() {}

    /// A new stream of all events reported from now on. Each access creates a new subscription.
    public var events: AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { $0[id] = nil }
        }
        return stream
    }

    /// Reports an event to the Standard, the storage provider and the subscribers, in that order.
    ///
    /// - Parameter event: the event to report.
    /// - Throws: the storage provider's error when deleting fails (subscribers are then not told).
    public func reportEvent(_ event: Event) async throws {
        if let standard = standard as? any AccountNotifyConstraint {
            await standard.respondToEvent(event)
        }
        if let provider = externalStorage?.provider {
            switch event {
            case let .deletingAccount(accountId):
                try await provider.delete(accountId)
            case let .disassociatingAccount(details):
                if details.contains(AccountDetails.__Key_accountId.self) {
                    await provider.disassociate(details.accountId)
                }
            case .associatedAccount, .detailsChanged:
                break
            }
        }
        for continuation in subscribers.current.values {
            continuation.yield(event)
        }
    }
}
