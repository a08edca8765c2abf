//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation

/// An account event read in place: its payload is checked when the view is made, exactly as
/// ``AccountEvent/decode(_:payload:)`` checks it (the same errors for the same bytes), and a field
/// is read from the bytes only when asked for.
///
/// Decoding builds a map of values per event, a `String` per key identifier and a copy of the
/// payload; a reader that needs the kind, the user id or which keys changed pays for none of it.
/// A log replay through views runs about three times as fast as one that decodes every event
/// (`peer-compare`'s replay rows).
///
/// A view points into the bytes it was made from: a record's payload inside
/// `scan`, or an array inside its `withUnsafeBytes`. Use it only while those bytes are valid;
/// keep ``event()`` (or the fields read from the view) beyond that.
///
/// A sealed payload (personal data encrypted with the account's key) is refused, as
/// ``AccountEvent/decode(_:payload:)`` refuses it: open it first
/// (``AccountEvent/decode(_:payload:accountId:vault:)``).
public struct AccountEventView {
    /// The event's type.
    public let kind: AccountEvent.Kind
    private let payload: UnsafeRawBufferPointer
    /// Where the user id the event sets begins, or nil.
    private let userIdOffset: Int?
    /// Where the event's list of removed identifiers begins, or nil.
    private let removedOffset: Int?
    /// The event's values: a signup's or an upgrade's values, or the modified ones.
    public let values: AccountValuesView

    /// Checks `payload` as an event of `kind` at the current schema version, without decoding it.
    /// - Parameters:
    ///   - kind: The event type, which fixes the payload's layout.
    ///   - payload: The unsealed payload; it is not copied, so it must outlive the view.
    /// - Throws: ``PayloadDecodingError``, as ``AccountEvent/decode(_:payload:)`` throws it.
    public init(_ kind: AccountEvent.Kind, payload: UnsafeRawBufferPointer) throws {
        var reader = try PayloadReader(payload)
        var userIdOffset: Int?
        var removedOffset: Int?
        var valuesOffset = 0
        var valueCount = 0
        // The fields as the catalogue declares them, checked as decoding checks them.
        for field in kind.declaration.fields {
            let start = reader.offset
            switch field.type {
            case .string: try reader.skipString(field.name)
            case .optionalString: if try reader.bool(field.name) { try reader.skipString(field.name) }
            case .bool: _ = try reader.bool(field.name)
            case .varint: _ = try reader.varint(field.name)
            case .strings: try reader.skipStrings(field.name)
            case .values:
                let count = try reader.skipValues(field.name)
                if field.role == .values { valueCount = count }
            }
            switch field.role {
            case .userId: userIdOffset = start
            case .values: valuesOffset = start
            case .removedIdentifiers: removedOffset = start
            case nil: break
            }
        }
        try reader.finish()
        self.kind = kind
        self.payload = payload
        self.userIdOffset = userIdOffset
        self.removedOffset = removedOffset
        self.values = AccountValuesView(payload: payload, offset: valuesOffset, count: valueCount)
        self.isRedacted = false
    }

    /// Checks `payload` as an event of the type named `type` (see ``init(_:payload:)``).
    /// - Parameters:
    ///   - type: The record's type name.
    ///   - payload: The unsealed payload; it is not copied, so it must outlive the view.
    /// - Throws: ``PayloadDecodingError/unknownEventType(_:)`` for a type this version does not
    ///   know, or the payload's error.
    public init(type: String, payload: UnsafeRawBufferPointer) throws {
        guard let kind = AccountEvent.Kind(name: type) else { throw PayloadDecodingError.unknownEventType(type) }
        try self.init(kind, payload: payload)
    }

    /// Calls `body` with a view of `record`'s event, read in place: the way to replay a log fast
    /// on any backend (`scan` on the LMDB log hands out records that are views themselves).
    ///
    /// A payload sealed with the account's key (a store with crypto-shredding, the default) is
    /// opened with `vault`'s key into a buffer of its own first; when that key was destroyed or
    /// is missing, `body` gets a view that ``isRedacted`` (as decoding gives
    /// ``AccountEvent/redacted(type:)``). The view is valid only during the call. A record written
    /// with an older key-set version carries its values as they were written:
    /// ``SchemaEvolution`` upcasts decoded events (``AccountLog/event(from:)``), not views.
    /// - Parameters:
    ///   - record: The log record to read.
    ///   - vault: The store's key vault, to open sealed payloads; nil reads them as redacted.
    ///   - body: Gets the view; it must not keep it beyond the call.
    /// - Returns: What `body` returns.
    /// - Throws: ``PayloadDecodingError``, including ``PayloadDecodingError/unknownEventType(_:)``
    ///   for a type this version does not know; the vault's or the seal's error; or what `body`
    ///   throws.
    public static func read<Result>(
        _ record: some LogRecord, vault: KeyVault? = nil, _ body: (AccountEventView) throws -> Result
    ) throws -> Result {
        guard let kind = record.withTypeBytes({ AccountEvent.Kind(nameBytes: $0) }) else {
            throw PayloadDecodingError.unknownEventType(record.type)
        }
        let payload: SealedPayload = try record.withPayload { payload in
            guard Sealing.isSealed(payload) else { return .inPlace }
            let accountId = record.streamID
            guard let key = try vault?.key(for: accountId) else { return .redacted }
            return .opened(try Sealing.open(payload, key: key, accountId: accountId, label: kind.name))
        }
        switch payload {
        case .inPlace: return try record.withPayload { try body(AccountEventView(kind, payload: $0)) }
        case let .opened(plain): return try plain.withUnsafeBytes { try body(AccountEventView(kind, payload: $0)) }
        case .redacted: return try body(AccountEventView(redacted: kind))
        }
    }

    /// What a record's payload is to ``read(_:vault:_:)``.
    private enum SealedPayload {
        case inPlace
        case opened([UInt8])
        case redacted
    }

    /// A view of an event whose payload can no longer be read.
    private init(redacted kind: AccountEvent.Kind) {
        self.kind = kind
        self.payload = UnsafeRawBufferPointer(start: nil, count: 0)
        self.userIdOffset = nil
        self.removedOffset = nil
        self.values = AccountValuesView(payload: payload, offset: 0, count: 0)
        self.isRedacted = true
    }

    /// True when the event's payload was sealed with a key that was destroyed (the account was
    /// deleted) or is missing: its kind is known, its fields are empty, and ``event()`` is
    /// ``AccountEvent/redacted(type:)``.
    public let isRedacted: Bool

    /// The user id the event sets: a signup's or an upgrade's, or the new one of a user id
    /// change; nil for the other kinds.
    public var userId: String? {
        guard let userIdOffset else { return nil }
        var reader = PayloadReader(checked: payload, at: userIdOffset)
        return try? reader.string("userId")
    }

    /// The identifiers whose values the event clears (a details change's), in the order written.
    public var removedIdentifiers: [String] {
        guard let removedOffset else { return [] }
        var reader = PayloadReader(checked: payload, at: removedOffset)
        return (try? reader.strings("removed")) ?? []
    }

    /// The whole event, decoded (what ``AccountEvent/decode(_:payload:)`` returns for the bytes).
    ///
    /// - Returns: The decoded event, or ``AccountEvent/redacted(type:)`` for a view that ``isRedacted``.
    /// - Throws: ``PayloadDecodingError`` when a field fails to decode (the view checked the layout
    ///   only).
    public func event() throws -> AccountEvent {
        if isRedacted { return .redacted(type: kind.name) }
        return try AccountEvent.decode(kind, payload: payload)
    }
}

/// The values an ``AccountEventView`` carries, read from its payload when asked for.
///
/// Entries come in the order written (the store writes them in identifier order). When an
/// identifier appears more than once, the last entry holds its value, as in the decoded map.
public struct AccountValuesView {
    private let payload: UnsafeRawBufferPointer
    private let offset: Int
    /// How many entries the payload holds.
    public let count: Int

    init(payload: UnsafeRawBufferPointer, offset: Int, count: Int) {
        self.payload = payload
        self.offset = offset
        self.count = count
    }

    /// True when the event carries no values.
    public var isEmpty: Bool { count == 0 }

    /// Calls `body` with each entry's identifier (UTF-8) and encoded value, in place: nothing is
    /// copied or allocated. The buffers are valid only during the call.
    ///
    /// - Parameter body: Gets each entry's identifier and encoded value; it must not keep the buffers.
    /// - Throws: Only what `body` throws; iteration stops there.
    public func forEachEntry(_ body: (_ identifier: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
        var at = offset
        guard count > 0 else { return }
        at = Self.skipVarint(payload, at)
        for _ in 0..<count {
            let identifier = Self.field(payload, &at)
            let value = Self.field(payload, &at)
            try body(identifier, value)
        }
    }

    /// The encoded value for `identifier`, or nil when the event does not carry one.
    ///
    /// - Parameter identifier: The key identifier to look up.
    /// - Returns: A copy of the last entry's encoded value for `identifier`, or nil.
    public subscript(identifier: String) -> Data? {
        var wanted = identifier
        return wanted.withUTF8 { wanted in
            var found: UnsafeRawBufferPointer?
            forEachEntry { candidate, value in
                if candidate.count == wanted.count, candidate.elementsEqual(UnsafeRawBufferPointer(wanted)) { found = value }
            }
            return found.map { Data($0) }
        }
    }

    /// The identifiers, in the order written.
    public var identifiers: [String] {
        var result: [String] = []
        result.reserveCapacity(count)
        forEachEntry { identifier, _ in result.append(String(decoding: identifier, as: UTF8.self)) }
        return result
    }

    /// The values as the decoded event holds them.
    ///
    /// - Returns: Every identifier with its encoded value (a repeated identifier keeps its last
    ///   value); empty when the event carries none.
    public func dictionary() -> EncodedAccountValues {
        guard count > 0 else { return [:] }
        var reader = PayloadReader(checked: payload, at: offset)
        return (try? reader.values("values")) ?? [:]
    }

    /// The field (a length, then that many bytes) at `at`, in checked bytes; moves past it.
    private static func field(_ payload: UnsafeRawBufferPointer, _ at: inout Int) -> UnsafeRawBufferPointer {
        var length = 0
        var shift = 0
        while true {
            let byte = payload[at]
            at += 1
            length |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        defer { at += length }
        return UnsafeRawBufferPointer(rebasing: payload[at..<(at + length)])
    }

    private static func skipVarint(_ payload: UnsafeRawBufferPointer, _ at: Int) -> Int {
        var at = at
        while payload[at] & 0x80 != 0 { at += 1 }
        return at + 1
    }
}
