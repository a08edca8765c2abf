//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// How the account keys changed over time, so that events written under an older key set are read
/// in the current shape on replay (upcasting). Each change has the key-set version that introduced
/// it; an event records the version it was written under (metadata `keys-version`), and on replay
/// every change newer than that is applied to its values, in order.
///
/// ```swift
/// var evolution = SchemaEvolution()
/// evolution.add(version: 2, .renamed(from: "biography", to: "bio"))
/// evolution.add(version: 3, .retyped("dateOfBirth", label: "ISO string to seconds", { data in … }))
/// evolution.add(version: 4, .removed("faxNumber"))
/// ```
public struct SchemaEvolution: Sendable {
    /// One change of the key set.
    public enum Change: Sendable {
        /// A key identifier was renamed; its values move to the new identifier.
        case renamed(from: String, to: String)
        /// A key's value type changed; `transform` turns old encoded values into new ones. The label
        /// describes the transformation (it goes into projection fingerprints).
        case retyped(String, label: String, @Sendable (Data) throws -> Data)
        /// A key was removed; its old values are dropped on replay.
        case removed(String)

        var summary: String {
            switch self {
            case let .renamed(from, to): "rename \(from)->\(to)"
            case let .retyped(identifier, label, _): "retype \(identifier) (\(label))"
            case let .removed(identifier): "remove \(identifier)"
            }
        }
    }

    /// An upcaster failed on a stored value.
    public struct UpcastError: Error, CustomStringConvertible {
        /// The key whose value could not be upcast.
        public let identifier: String
        /// The key-set version the upcast was to reach.
        public let version: Int
        /// What went wrong.
        public let reason: String
        /// A one-line, human-readable description (for logs and error messages).
        public var description: String { "upcasting \"\(identifier)\" to key-set version \(version) failed: \(reason)" }
    }

    private(set) var changes: [(version: Int, change: Change)] = []

    /// The key-set version new events are written under: the newest change's version (1 when none).
    public var currentVersion: Int { changes.map(\.version).max() ?? 1 }

    /// An evolution with no changes: events are read as written.
    public init() {}

    /// Registers a change introduced by key-set `version` (2 or more; versions may repeat).
    ///
    /// - Parameters:
    ///   - version: The key-set version that introduces the change; version 1 is the original set, so
    ///     it must be 2 or more (a smaller one stops the program).
    ///   - change: The rename, retyping or removal of a key.
    public mutating func add(version: Int, _ change: Change) {
        precondition(version >= 2, "key-set version 1 is the original; changes start at 2")
        changes.append((version, change))
        changes.sort { $0.version < $1.version }
    }

    /// The values as the current key set expects them, from values written under `version`.
    /// Identifiers no change mentions (including unknown ones) pass through unchanged.
    ///
    /// - Parameters:
    ///   - values: Encoded values as an event of key-set `version` holds them.
    ///   - version: The key-set version the values were written under; only later changes apply.
    /// - Returns: The values with every later change applied, in version order.
    /// - Throws: ``UpcastError`` when a retyping's transform fails on a stored value.
    public func upcast(_ values: EncodedAccountValues, writtenAt version: Int) throws -> EncodedAccountValues {
        var values = values
        for (changeVersion, change) in changes where changeVersion > version {
            switch change {
            case let .renamed(from, to):
                if let value = values.removeValue(forKey: from) { values[to] = value }
            case let .retyped(identifier, _, transform):
                if let value = values[identifier] {
                    do {
                        values[identifier] = try transform(value)
                    } catch {
                        throw UpcastError(identifier: identifier, version: changeVersion, reason: "\(error)")
                    }
                }
            case let .removed(identifier):
                values[identifier] = nil
            }
        }
        return values
    }

    /// Upcasts the identifiers of removed keys (`account.details-modified` lists them).
    ///
    /// - Parameters:
    ///   - identifiers: The removed identifiers as the event lists them.
    ///   - version: The key-set version the event was written under; only later changes apply.
    /// - Returns: The identifiers renamed as later changes say, without those of removed keys.
    public func upcast(removed identifiers: [String], writtenAt version: Int) -> [String] {
        var identifiers = identifiers
        for (changeVersion, change) in changes where changeVersion > version {
            switch change {
            case let .renamed(from, to):
                identifiers = identifiers.map { $0 == from ? to : $0 }
            case let .removed(identifier):
                identifiers.removeAll { $0 == identifier }
            case .retyped:
                break
            }
        }
        return identifiers
    }

    /// Upcasts a whole event's values.
    ///
    /// - Parameters:
    ///   - event: A decoded event.
    ///   - version: The key-set version the event was written under (its record's metadata says which).
    /// - Returns: The event with its values and removed identifiers upcast; the event itself when it
    ///   was written under the current version or carries no values.
    /// - Throws: ``UpcastError`` when a retyping's transform fails on one of its values.
    public func upcast(_ event: AccountEvent, writtenAt version: Int) throws -> AccountEvent {
        guard version < currentVersion else { return event }
        switch event {
        case let .accountCreated(userId, passwordHash, isAnonymous, values):
            return .accountCreated(
                userId: userId, passwordHash: passwordHash, isAnonymous: isAnonymous,
                values: try upcast(values, writtenAt: version))
        case let .anonymousAccountUpgraded(userId, passwordHash, values):
            return .anonymousAccountUpgraded(userId: userId, passwordHash: passwordHash, values: try upcast(values, writtenAt: version))
        case let .detailsModified(modified, removed):
            return .detailsModified(modified: try upcast(modified, writtenAt: version), removed: upcast(removed: removed, writtenAt: version))
        case let .externalDetailsModified(modified, removed):
            return .externalDetailsModified(
                modified: try upcast(modified, writtenAt: version),
                removed: upcast(removed: removed, writtenAt: version))
        case .passwordChanged, .userIdChanged, .accountDeleted, .loginSucceeded, .loginFailed, .loggedOut, .passwordResetRequested,
            .sessionStarted, .sessionEnded, .externalDetailsErased, .passwordRehashed, .identityLinked, .identityUnlinked,
            .sessionClient, .totpEnrolled, .totpConfirmed, .totpUsed, .recoveryCodeUsed, .totpRemoved, .providerTokenStored,
            .providerTokenRevoked, .accountDisabled, .accountEnabled, .redacted:
            return event
        }
    }

    /// Describes the changes, for projection fingerprints.
    public var fingerprint: String {
        changes.map { "v\($0.version): \($0.change.summary)" }.joined(separator: "; ")
    }

    /// The metadata key under which events record their key-set version.
    public static let metadataKey = "keys-version"
}
