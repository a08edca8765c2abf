//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import PostgresNIO

/// Where a PostgreSQL log lives, read from a URL:
/// `postgres://user[:password]@host[:port]/database[?schema=name&host=/socket/dir&sslmode=disable&standby=host:port]`.
///
/// `schema` (default `spezi_account_log`) names the PostgreSQL schema that holds the log's tables,
/// so several logs can share a database; it must be a plain lower-case identifier. A `host` query
/// item that is a path connects through the Unix socket in that directory. `standby` names a hot
/// standby of the server (streaming replication), reached with the same role and database: the
/// log then reads records and subscribes there, and appends on the primary (POSTGRES.md, "Reading
/// from a hot standby").
public struct PostgresLogLocation: Sendable, Equatable, CustomStringConvertible {
    /// The server's host name or address (ignored with a socket directory).
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// A directory holding the server's Unix socket, instead of TCP.
    public var socketDirectory: String?
    /// The role to log in as.
    public var username: String
    /// Its password, if the server asks for one.
    public var password: String?
    /// The database.
    public var database: String
    /// The schema that holds the log's tables.
    public var schema: String
    /// Whether to insist on TLS (`sslmode=require`); by default TLS is used when the server offers it.
    public var requireTLS: Bool
    /// A hot standby's host to read records from and subscribe on (`standby=host:port`), or nil.
    public var standbyHost: String?
    /// The hot standby's TCP port.
    public var standbyPort: Int = 5432

    /// The schema used when the URL names none.
    public static let defaultSchema = "spezi_account_log"

    /// Reads a `postgres://` or `postgresql://` URL; throws ``PostgresLogError/invalidLocation(_:)``
    /// naming what is wrong.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresLogError.invalidLocation("\(Self.redact(text)) is not a postgres:// URL")
        }
        let items = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw PostgresLogError.invalidLocation("\(Self.redact(text)) names no database (…/DATABASE)") }
        let schema = items["schema"] ?? Self.defaultSchema
        guard Self.isPlainIdentifier(schema) else {
            throw PostgresLogError.invalidLocation("schema \"\(schema)\" must be 1–40 lower-case letters, digits or _ and start with a letter")
        }
        self.host = components.host ?? "localhost"
        self.port = components.port ?? 5432
        self.socketDirectory = items["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        self.username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        self.password = components.password.flatMap { $0.removingPercentEncoding }
        self.database = database
        self.schema = schema
        self.requireTLS = items["sslmode"] == "require"
        if let mode = items["sslmode"], !["disable", "prefer", "require"].contains(mode) {
            throw PostgresLogError.invalidLocation("sslmode \(mode) is not supported (disable, prefer or require)")
        }
        self.disableTLS = items["sslmode"] == "disable"
        if let standby = items["standby"] {
            let parts = standby.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let name = parts.first, !name.isEmpty,
                parts.count == 1 || Int(parts[1]).map({ (1...65_535).contains($0) }) == true
            else {
                throw PostgresLogError.invalidLocation("standby \"\(standby)\" must be host or host:port")
            }
            standbyHost = String(name)
            standbyPort = parts.count == 2 ? Int(parts[1])! : 5432
        }
    }

    /// The standby as a location of its own (same role, database and schema), or nil.
    var standby: PostgresLogLocation? {
        guard let standbyHost else { return nil }
        var location = self
        location.host = standbyHost
        location.port = standbyPort
        location.socketDirectory = nil
        location.standbyHost = nil
        return location
    }

    /// Whether TLS is off (`sslmode=disable`).
    public var disableTLS: Bool

    /// The URL without its password, for messages and logs.
    public var description: String {
        var text = "postgres://\(username)@"
        text += socketDirectory == nil ? "\(host):\(port)" : ""
        text += "/\(database)?schema=\(schema)"
        if let socketDirectory { text += "&host=\(socketDirectory)" }
        if let standbyHost { text += "&standby=\(standbyHost):\(standbyPort)" }
        return text
    }

    /// The server this location's connections go to (`host:port`, or the socket's path): every
    /// part of a process that talks to one server shares what it learns of the server's outages.
    package var server: String { unixSocketPath ?? "\(host):\(port)" }

    /// The path of the server's Unix socket, when the location names a socket directory.
    var unixSocketPath: String? { socketDirectory.map { $0 + "/.s.PGSQL.\(port)" } }

    /// The channel commits are announced on (one per schema).
    var channel: String { "spezi_log_\(schema)" }

    static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, (0x61...0x7A).contains(first), name.utf8.count <= 40 else { return false }
        return name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }

    /// `user:password@` becomes `user@`.
    static func redact(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"), let at = url[schemeEnd.upperBound...].lastIndex(of: "@") else { return url }
        let credentials = url[schemeEnd.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + String(url[at...])
    }
}

/// What can go wrong with the PostgreSQL log besides the log's own errors.
public enum PostgresLogError: Error, Sendable, Equatable, CustomStringConvertible, TransientFailure {
    /// The URL cannot be used; the message says why.
    case invalidLocation(String)
    /// The schema was made by a newer version of this backend.
    case newerSchema(found: Int, supported: Int, location: String)
    /// The server could not be reached or refused; the message carries the server's words.
    case server(String)

    /// A one-line, human-readable description.
    public var description: String {
        switch self {
        case let .invalidLocation(message): "invalid PostgreSQL location: \(message)"
        case let .newerSchema(found, supported, location):
            "the log at \(location) has schema version \(found); this build knows versions up to \(supported): upgrade it"
        case let .server(message): message
        }
    }

    /// A server that could not be reached or did not answer in time may answer later; a wrong
    /// location or a newer schema stays so.
    public var isTransient: Bool {
        switch self {
        case .server: true
        case .invalidLocation, .newerSchema: false
        }
    }
}

extension PostgresLogLocation {
    /// The settings of one connection of its own (not from a pool): the schema, the durability
    /// and the application name are sent when it starts.
    func connectionConfiguration(applicationName: String, durable: Bool, connectTimeout: Duration) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socket = unixSocketPath {
            configuration = PostgresConnection.Configuration(unixSocketPath: socket, username: username, password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS =
                disableTLS
                ? .disable
                : requireTLS
                    ? .require(try .init(configuration: .makeClientConfiguration())) : .prefer(try .init(configuration: .makeClientConfiguration()))
            configuration = PostgresConnection.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = [
            ("search_path", schema), ("synchronous_commit", durable ? "on" : "off"), ("application_name", applicationName)
        ]
        configuration.options.connectTimeout = TimeAmount(connectTimeout)
        return configuration
    }
}
