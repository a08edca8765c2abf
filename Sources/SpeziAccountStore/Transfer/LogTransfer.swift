//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Synchronization

/// One log record as a line of JSON: every field the hash chain covers, plus the chain hash.
public struct ExportedRecord: Codable, Sendable, Equatable {
    /// The global position of the record.
    public let position: UInt64
    /// The stream (account id).
    public let stream: String
    /// The version within the stream.
    public let streamVersion: UInt64
    /// The event id.
    public let eventID: UUID
    /// The event type name.
    public let type: String
    /// The schema version of the payload.
    public let schemaVersion: UInt32
    /// When it was appended, in microseconds since 1970.
    public let timestampMicros: Int64
    /// Who caused it, if known.
    public let actor: String?
    /// The correlation id, if any.
    public let correlationID: String?
    /// The causation id, if any.
    public let causationID: String?
    /// Further metadata pairs.
    public let extra: [String: String]
    /// The payload, base64 (sealed payloads stay sealed).
    public let payload: Data
    /// The chain hash, hex.
    public let hash: String

    /// The exported form of `record`.
    ///
    /// - Parameter record: The log record to export, taken over field by field (the payload unopened).
    public init(_ record: RecordedEvent) {
        position = record.position
        stream = record.streamID
        streamVersion = record.streamVersion
        eventID = record.eventID
        type = record.type
        schemaVersion = record.schemaVersion
        timestampMicros = Int64((record.timestamp.timeIntervalSince1970 * 1_000_000).rounded())
        actor = record.metadata.actor
        correlationID = record.metadata.correlationID
        causationID = record.metadata.causationID
        extra = record.metadata.extra
        payload = record.payload
        hash = record.hash.description
    }
}

/// What can go wrong moving a log.
public enum LogTransferError: Error, Sendable, Equatable, CustomStringConvertible {
    case notEmpty(String)
    /// The log an import was to fill holds records already.
    case logNotEmpty(String, records: UInt64)
    case badLine(Int, String)
    case outOfOrder(line: String, position: UInt64, expected: UInt64)
    case hashMismatch(position: UInt64)
    case missingKey(position: UInt64, account: String)
    /// The user id the record at `position` gives `account` normalizes to the user id of `holder`
    /// (``UserIdNormalization``), and the claims of both forms, current and older, are taken.
    case userIdCollision(position: UInt64, account: String, holder: String)
    /// The account event at `position` (from `line`, or the place it was read from) does not
    /// decode: nothing is imported, rather than an account that silently takes no user id.
    case undecodable(line: String, position: UInt64, type: String, reason: String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .notEmpty(path): "\(path) is not empty: an import or restore needs a new or empty folder"
        case let .logNotEmpty(location, records): "the log at \(location) holds \(records) records: an import needs an empty log"
        case let .badLine(line, reason): "line \(line): \(reason)"
        case let .outOfOrder(line, position, expected): "\(line): position \(position), expected \(expected)"
        case let .hashMismatch(position): "position \(position): the imported record's chain hash differs from the exported one"
        case let .missingKey(position, account):
            "position \(position) is sealed with the key of account \(account), which the vault given does not hold: "
                + "give the exported store's own keys/vault (--vault)"
        case let .userIdCollision(position, account, holder):
            "position \(position): the user id of account \(account) normalizes to that of account \(holder) "
                + "(see accountctl verify): change one of them in the exported store first"
        case let .undecodable(line, position, type, reason):
            "\(line): the \(type) record at position \(position) does not decode: \(reason)"
        }
    }
}

/// Export of a whole log to JSON Lines, and import into a new store that verifies with the same
/// hash chain. The key vault is not exported (it holds the keys that make sealed payloads
/// readable): copy `keys/vault` beside the export, and give it to the import, or the copy's
/// accounts read as redacted.
public enum LogTransfer {
    /// Writes every record, oldest first, one JSON object per line; returns the number written.
    ///
    /// - Parameters:
    ///   - log: The log to export.
    ///   - output: The file the JSON Lines go to; it is written in chunks of about 1 MiB.
    ///   - progress: Called after each chunk with the records written so far and the total to write.
    /// - Returns: The number of records written: every record up to the last position when the export began.
    /// - Throws: The log's `EventLogError` when reading fails, an encoding error, or the file handle's
    ///   error when writing fails; what was written before stays in `output`.
    public static func export(
        _ log: any EventLogBackend, to output: FileHandle, progress: ((UInt64, UInt64) -> Void)? = nil
    ) async throws -> UInt64 {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let total = try await log.lastPosition()
        var count: UInt64 = 0
        var buffer = Data()
        var next: UInt64 = 1
        // Up to the position the export started at: records appended meanwhile are left out, so
        // the count matches the progress total.
        while next <= total {
            let batch = try await log.read(from: next, direction: .forward, limit: 1_024)
            guard let last = batch.last else { break }
            for record in batch where record.position <= total {
                buffer += try encoder.encode(ExportedRecord(record))
                buffer.append(UInt8(ascii: "\n"))
                count += 1
            }
            next = last.position + 1
            if buffer.count > 1 << 20 {
                try output.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
                progress?(count, total)
            }
        }
        try output.write(contentsOf: buffer)
        progress?(count, total)
        return count
    }

    /// Rebuilds a store from an export in `directory` (which must not exist, or be empty): same
    /// positions, event ids, times, metadata and payloads, so every chain hash matches the exported
    /// one (checked record by record). User-id claims are re-made from the events, using `vault` (a
    /// copy of the original store's `keys/vault`) to read sealed user ids; without one the new store
    /// gets a new vault, and an export with sealed payloads is refused.
    ///
    /// With `logLocation` a `postgres://` URL, the log goes into PostgreSQL (its schema must hold
    /// no records yet) with the key vault beside it, and `directory` becomes the node's folder for
    /// its projections: an LMDB store moves to PostgreSQL with every chain hash kept. (Export a
    /// PostgreSQL store with `export(_:to:progress:)` and copy its vault with `KeyVault.copy(to:)`
    /// to move it back.)
    ///
    /// All or nothing: the store is built in a folder beside `directory` (the log in a schema of
    /// its own) and moved into place only when every record checked out; a failure leaves
    /// `directory` and the target log as they were.
    ///
    /// - Parameters:
    ///   - input: The JSON Lines file that `export(_:to:progress:)` wrote.
    ///   - directory: The new store's folder: it must not exist or be empty.
    ///   - logLocation: A `postgres://` URL to put the log into PostgreSQL, or nil for an LMDB log
    ///     inside `directory`.
    ///   - vaultFile: A copy of the exported store's `keys/vault`, needed when the export holds sealed
    ///     payloads; nil gives the new store a new vault.
    ///   - progress: Called with the number of records imported so far.
    /// - Returns: The number of records imported.
    /// - Throws: ``LogTransferError`` for a line that is not an exported record, records out of order,
    ///   an account event that does not decode, a chain hash that differs, a sealed record whose key
    ///   `vaultFile` lacks, colliding user ids, a folder that is not empty or a PostgreSQL log that
    ///   holds records;
    ///   ``AccountStoreError/unsupportedLogLocation(_:)`` for a log location that is neither a
    ///   `postgres://` URL nor nil; and file, log or key-vault errors met on the way. `directory`
    ///   and the target log are left as they were.
    public static func importLog(
        from input: URL, into directory: String, logLocation: String? = nil, vault vaultFile: URL?,
        progress: ((UInt64) -> Void)? = nil
    ) async throws -> UInt64 {
        let reader = try LineReader(url: input)
        let decoder = JSONDecoder()
        var lineNumber = 0
        let next: StoreBuilder.Source = {
            while let line = try reader.next() {
                lineNumber += 1
                guard !line.isEmpty else { continue }
                do {
                    return (try decoder.decode(ExportedRecord.self, from: line), "line \(lineNumber)")
                } catch {
                    throw LogTransferError.badLine(lineNumber, "not an exported record")
                }
            }
            return nil
        }
        switch try LogLocation(logLocation, storeFolder: URL(fileURLWithPath: directory)) {
        case .postgres(let url):
            let kind = try SharedLogKinds.kind(for: url)
            let folder = URL(fileURLWithPath: directory).standardizedFileURL
            try StoreFolders.checkFree(folder)
            let count = try await kind.importLog(url: url, vault: vaultFile) { log, vault in
                try await StoreBuilder.fill(log, vault: vault, progress: progress, next: next)
            }
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return count
        case .folder:
            guard logLocation == nil else {
                throw AccountStoreError.unsupportedLogLocation(
                    "an import builds an LMDB log inside the store's folder: give no log location, or a postgres:// URL")
            }
            return try await StoreBuilder.build(at: directory, vault: vaultFile, progress: progress, next: next)
        }
    }
}

/// Reads a file line by line in 1 MiB chunks (no whole-file buffer).
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    private var atEnd = false

    init(url: URL) throws {
        handle = try FileHandle(forReadingFrom: url)
    }

    deinit { try? handle.close() }

    /// The next line without its newline, or nil at the end.
    func next() throws -> Data? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = buffer[(newline + 1)...]
                return Data(line)
            }
            if atEnd {
                guard !buffer.isEmpty else { return nil }
                defer { buffer = Data() }
                return Data(buffer)
            }
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { atEnd = true } else { buffer = Data(buffer) + chunk }
        }
    }
}
