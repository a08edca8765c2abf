//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation

/// Where a store's event log lives, read from ``AccountStoreOptions/logLocation``; opening a store
/// picks the log backend from it.
///
/// - nil: the embedded LMDB log in the store's own `log/` folder.
/// - a path (relative ones inside the store's folder), or a `file://` URL: an embedded LMDB log in
///   that folder.
/// - a `postgres://` or `postgresql://` URL: a log in PostgreSQL shared by several app servers
///   (`postgres://user[:password]@host[:port]/database?schema=name`, see POSTGRES.md); each server
///   keeps its projections in its own store folder. Opening one needs the `AccountStorePostgres`
///   module, registered once at start-up (`PostgresLogSupport.register()`), so that a program on
///   the embedded log never links PostgreSQL's client.
public enum LogLocation: Sendable, Equatable, CustomStringConvertible {
    /// An embedded LMDB log in this folder.
    case folder(String)
    /// A shared PostgreSQL log, by its URL (``description`` leaves the password out).
    case postgres(url: String)

    /// Reads `location` for a store whose folder is `storeFolder`.
    ///
    /// - Parameters:
    ///   - location: The configured location: nil or empty, a path, a `file://` URL, or a
    ///     `postgres://` or `postgresql://` URL.
    ///   - storeFolder: The store's folder, which nil and relative paths are resolved in.
    /// - Throws: ``AccountStoreError/unsupportedLogLocation(_:)`` for a `file://` URL that names no
    ///   path, or a URL with a scheme no backend serves.
    public init(_ location: String?, storeFolder: URL) throws {
        guard let location, !location.isEmpty else {
            self = .folder(storeFolder.appendingPathComponent("log").path)
            return
        }
        let lowered = location.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            self = .postgres(url: location)
        } else if lowered.hasPrefix("file://") {
            guard let url = URL(string: location), url.isFileURL, !url.path.isEmpty else {
                throw AccountStoreError.unsupportedLogLocation("\(location) is not a valid file URL")
            }
            self = .folder(url.standardizedFileURL.path)
        } else if let scheme = lowered.firstRange(of: "://") {
            throw AccountStoreError.unsupportedLogLocation(
                "no log backend for \"\(lowered[..<scheme.lowerBound])://\" (use a folder, a file:// URL or a postgres:// URL)")
        } else {
            // A relative path is taken inside the store's folder.
            let url = location.hasPrefix("/") ? URL(fileURLWithPath: location) : storeFolder.appendingPathComponent(location)
            self = .folder(url.standardizedFileURL.path)
        }
    }

    /// The location for messages (never a password).
    public var description: String {
        switch self {
        case let .folder(path): path
        case let .postgres(url): Self.withoutPassword(url)
        }
    }

    /// Opens the backend; `readOnly` opens an LMDB log read-only (nothing is indexed, upgraded or
    /// written), for checks that must not change what they check.
    func open(sync: Durability, clock: @escaping @Sendable () -> Date, readOnly: Bool = false) async throws -> any EventLogBackend {
        switch self {
        case let .folder(path):
            var options = EventLogOptions()
            options.sync = sync
            options.clock = clock
            options.readOnly = readOnly
            return try EventLog(path: path, options: options)
        case let .postgres(url):
            return try await SharedLogKinds.kind(for: url).open(url: url, sync: sync, clock: clock)
        }
    }

    /// `user:password@` becomes `user@`.
    static func withoutPassword(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"), let at = url[schemeEnd.upperBound...].lastIndex(of: "@") else { return url }
        let credentials = url[schemeEnd.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + String(url[at...])
    }
}
