//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// What an append expects of its stream: the optimistic-concurrency check.
public enum ExpectedVersion: Sendable, Hashable, CustomStringConvertible {
    /// No check.
    case any
    /// The stream must not exist yet.
    case noStream
    /// The stream's last event must have this version (1 is the first event).
    case exact(UInt64)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case .any: "any version"
        case .noStream: "no stream"
        case let .exact(version): "version \(version)"
        }
    }
}

/// Who did what on whose behalf: stored with every record.
public struct EventMetadata: Sendable, Hashable {
    /// The user, service or tool that caused the event.
    public var actor: String?
    /// Groups the events of one request or workflow.
    public var correlationID: String?
    /// The event or command that directly caused this one.
    public var causationID: String?
    /// Free key/values (keys must not be `actor`, `correlation-id` or `causation-id`).
    public var extra: [String: String]

    /// Creates metadata; every field is optional.
    ///
    /// - Parameters:
    ///   - actor: the user, service or tool that caused the event.
    ///   - correlationID: the request or workflow the event belongs to.
    ///   - causationID: the event or command that caused it.
    ///   - extra: further pairs; the reserved keys are ignored.
    public init(actor: String? = nil, correlationID: String? = nil, causationID: String? = nil, extra: [String: String] = [:]) {
        self.actor = actor
        self.correlationID = correlationID
        self.causationID = causationID
        self.extra = extra
    }

    /// The reserved keys under which the named fields are stored.
    public static let reservedKeys: Set<String> = ["actor", "correlation-id", "causation-id"]

    /// The metadata as one sorted list of string pairs, the stored form.
    package var pairs: [(String, String)] {
        var result: [(String, String)] = []
        result.reserveCapacity(extra.count + 3)
        for (key, value) in extra where !Self.reservedKeys.contains(key) { result.append((key, value)) }
        if let actor { result.append(("actor", actor)) }
        if let correlationID { result.append(("correlation-id", correlationID)) }
        if let causationID { result.append(("causation-id", causationID)) }
        if result.count > 1 { result.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) } }
        return result
    }

    /// Metadata from its stored pairs.
    package init(pairs: [(String, String)]) {
        self.init()
        for (key, value) in pairs {
            switch key {
            case "actor": actor = value
            case "correlation-id": correlationID = value
            case "causation-id": causationID = value
            default: extra[key] = value
            }
        }
    }
}

extension UUID {
    /// A random (version 4) UUID from the system's secure generator: its bits come from a pool
    /// filled with 4 KiB of `/dev/urandom` at a time, where Foundation's `UUID()` opens and reads
    /// `/dev/urandom` for every id.
    ///
    /// - Returns: a new random UUID.
    package static func random() -> UUID {
        var bytes = (RandomWords.next(), RandomWords.next())
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40
            raw[8] = (raw[8] & 0x3F) | 0x80
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}

extension UUID {
    /// A time-ordered (version 7, RFC 9562) UUID: 48 bits of Unix milliseconds, 12 bits of the
    /// fraction of that millisecond, then 62 random bits. Ids made one after another sort in the
    /// order they were made (to about a quarter of a microsecond), so the log's `event-ids` index
    /// takes them near its end instead of on a random page each; they reveal when the event was
    /// proposed, which its record's timestamp shows anyway.
    ///
    /// - Returns: a new version-7 UUID, ordered by the time it was made.
    package static func timeOrdered() -> UUID {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let nanoseconds = UInt64(max(time.tv_sec, 0)) * 1_000_000_000 + UInt64(max(time.tv_nsec, 0))
        let milliseconds = nanoseconds / 1_000_000
        let fraction = (nanoseconds % 1_000_000) * 4_096 / 1_000_000
        let random = RandomWords.next()
        let high = milliseconds << 16 | 0x7000 | fraction
        let low = random & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        var bytes = (high.bigEndian, low.bigEndian)
        return withUnsafeBytes(of: &bytes) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }
}

/// New event ids, for a writer of its own (the log's own ``ProposedEvent`` takes a time-ordered
/// one by default). Kept off Foundation's `UUID`, so that this package adds nothing to a type that
/// is not its own.
public enum EventIDs {
    /// A time-ordered (version 7, RFC 9562) UUID: ids made one after another sort in the order
    /// they were made, which keeps the log's event-id index appending near its end.
    ///
    /// - Returns: a new version-7 UUID.
    public static func timeOrdered() -> UUID { UUID.timeOrdered() }

    /// A random (version 4) UUID from the system's secure generator, read 4 KiB at a time.
    ///
    /// - Returns: a new version-4 UUID.
    public static func random() -> UUID { UUID.random() }
}

/// An event to append.
public struct ProposedEvent: Sendable, Hashable {
    /// Unique per event: appending an id that is already in the log returns the original position.
    public var eventID: UUID
    /// The event's type name, e.g. `account.created`.
    public var type: String
    /// The version of the payload's schema for this type.
    public var schemaVersion: UInt32
    /// Actor, correlation, causation and free key/values.
    public var metadata: EventMetadata
    /// The encoded event.
    public var payload: Data

    /// Creates an event to append; its id makes a retried append idempotent. The default id is
    /// time-ordered (`UUID.timeOrdered()`, version 7).
    ///
    /// - Parameters:
    ///   - eventID: the event's id; a retry must send the same one.
    ///   - type: the event's type name.
    ///   - schemaVersion: the version of the payload's schema.
    ///   - metadata: who caused the event and why.
    ///   - payload: the encoded event.
    public init(
        eventID: UUID = EventIDs.timeOrdered(), type: String, schemaVersion: UInt32 = 1, metadata: EventMetadata = EventMetadata(), payload: Data
    ) {
        self.eventID = eventID
        self.type = type
        self.schemaVersion = schemaVersion
        self.metadata = metadata
        self.payload = payload
    }
}

/// A SHA-256 hash of the record chain (stored inline: no allocation per record).
public struct ChainHash: Sendable, Hashable, CustomStringConvertible {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// The hash before the first record: 32 zero bytes.
    public static let genesis = ChainHash(words: (0, 0, 0, 0))

    private init(words: (UInt64, UInt64, UInt64, UInt64)) {
        self.words = words
    }

    /// A hash from its 32 bytes.
    ///
    /// - Parameter bytes: exactly 32 bytes (fewer or more stop the program).
    public init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 32, "a chain hash has 32 bytes")
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { target in
            for (index, byte) in bytes.enumerated() { target[index] = byte }
        }
        self.words = words
    }

    /// A hash read from 32 bytes of a buffer.
    package init(_ buffer: UnsafeRawBufferPointer) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<32])) }
        self.words = words
    }

    /// The 32 bytes.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: words) { Array($0) }
    }

    /// Calls `body` with the 32 bytes.
    package func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: words, body)
    }

    /// Whether both sides are equal.
    public static func == (lhs: ChainHash, rhs: ChainHash) -> Bool {
        lhs.words == rhs.words
    }

    /// Hashes the same parts that equality compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

    /// Lower-case hexadecimal.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// An event as the log stored it.
public struct RecordedEvent: Sendable, Hashable {
    /// Its place in the whole log: 1, 2, 3, … with no gaps.
    public let position: UInt64
    /// The stream (e.g. the account id) it belongs to.
    public let streamID: String
    /// Its place in the stream: 1, 2, 3, …
    public let streamVersion: UInt64
    /// The id the event was appended with.
    public let eventID: UUID
    /// The event type name.
    public let type: String
    /// The schema version of the payload.
    public let schemaVersion: UInt32
    /// When the log committed it (microsecond precision).
    public let timestamp: Date
    /// Who caused the event and why (actor, correlation and causation ids, extra pairs).
    public let metadata: EventMetadata
    /// The payload bytes, as appended.
    public let payload: Data
    /// The chain hash up to and including this record.
    public let hash: ChainHash

    /// A record as a backend read it.
    ///
    /// - Parameters:
    ///   - position: its place in the log.
    ///   - streamID: its stream.
    ///   - streamVersion: its place in the stream.
    ///   - eventID: the id it was appended with.
    ///   - type: its type name.
    ///   - schemaVersion: the version of its payload's schema.
    ///   - timestamp: when the log committed it.
    ///   - metadata: who caused it and why.
    ///   - payload: its payload bytes.
    ///   - hash: the chain hash up to and including it.
    public init(
        position: UInt64, streamID: String, streamVersion: UInt64, eventID: UUID, type: String, schemaVersion: UInt32, timestamp: Date,
        metadata: EventMetadata, payload: Data, hash: ChainHash
    ) {
        self.position = position
        self.streamID = streamID
        self.streamVersion = streamVersion
        self.eventID = eventID
        self.type = type
        self.schemaVersion = schemaVersion
        self.timestamp = timestamp
        self.metadata = metadata
        self.payload = payload
        self.hash = hash
    }
}

/// What an append did.
public struct AppendResult: Sendable, Hashable {
    /// The position of the first and last event appended (or found, for a retry).
    public let positions: ClosedRange<UInt64>
    /// The stream's version after the append.
    public let streamVersion: UInt64
    /// True when every event id was already in the log, so nothing new was written.
    public let wasDuplicate: Bool

    /// What a backend reports for an append.
    ///
    /// - Parameters:
    ///   - positions: the positions of the first and last event.
    ///   - streamVersion: the stream's version after the append.
    ///   - wasDuplicate: whether every event was in the log already.
    public init(positions: ClosedRange<UInt64>, streamVersion: UInt64, wasDuplicate: Bool) {
        self.positions = positions
        self.streamVersion = streamVersion
        self.wasDuplicate = wasDuplicate
    }
}

/// The direction of a read by position.
public enum ReadDirection: Sendable {
    case forward
    case backward
}
