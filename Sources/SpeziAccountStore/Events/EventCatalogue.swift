//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// How a payload field is encoded, named as FORMAT.md's "Payload encoding" table names it.
public enum PayloadFieldType: String, Sendable, CaseIterable {
    /// A length, then that many bytes of UTF-8.
    case string
    /// A presence flag, then a string when present.
    case optionalString = "optional string"
    /// One byte, 0 or 1.
    case bool
    /// Unsigned LEB128.
    case varint
    /// A count, then that many strings.
    case strings
    /// A count, then that many pairs of a key identifier and its encoded value.
    case values
}

/// One field of an event's payload, in the order fields are written.
public struct PayloadField: Sendable, Equatable {
    /// What a reader can take from a field without decoding the whole event (``AccountEventView``).
    public enum Role: Sendable, Equatable {
        /// The user id the event sets (``AccountEventView/userId``).
        case userId
        /// The values the event carries (``AccountEventView/values``).
        case values
        /// The identifiers whose values the event clears (``AccountEventView/removedIdentifiers``).
        case removedIdentifiers
    }

    /// The field's name, as FORMAT.md and decoding errors name it.
    public let name: String
    /// How the field is encoded.
    public let type: PayloadFieldType
    /// What ``AccountEventView`` reads from it, if anything.
    public let role: Role?

    static func string(_ name: String, role: Role? = nil) -> PayloadField { PayloadField(name: name, type: .string, role: role) }
    static func optionalString(_ name: String) -> PayloadField { PayloadField(name: name, type: .optionalString, role: nil) }
    static func bool(_ name: String) -> PayloadField { PayloadField(name: name, type: .bool, role: nil) }
    static func varint(_ name: String) -> PayloadField { PayloadField(name: name, type: .varint, role: nil) }
    static func strings(_ name: String, role: Role? = nil) -> PayloadField { PayloadField(name: name, type: .strings, role: role) }
    static func values(_ name: String, role: Role? = nil) -> PayloadField { PayloadField(name: name, type: .values, role: role) }
}

extension AccountEvent {
    /// What an event does to its account's user-id claim (FORMAT.md, "Accounts, anonymous accounts
    /// and claims"): what an import re-makes and what the look-alike index follows.
    public enum UserIdClaim: Sendable, Equatable {
        /// None.
        case none
        /// Takes the claim of the user id it sets (unless that is empty: an anonymous account).
        case takes
        /// Releases the account's claim and takes the one of the user id it sets.
        case moves
        /// Releases the account's claim.
        case releases
    }

    /// One entry of the event catalogue: everything about an event kind but its Swift case.
    ///
    /// The catalogue (``Kind/declaration``) is where an event kind is declared: its type name and
    /// schema version, its payload's fields in order, whether the store seals it, whether it
    /// changes the account's state or its user-id claim, and how its fields make the event. The
    /// kinds' names, the schema versions (``AccountEvent/currentSchemaVersions``), decoding and
    /// ``AccountEventView`` are derived from it; encoding is checked against its fields. A test
    /// compares it with FORMAT.md's table of event types and `Tools/format-check.py`'s.
    public struct Declaration: Sendable {
        /// The type name written to the log (`account.created` …).
        public let name: String
        /// The schema version of the payload layout that ``fields`` describe.
        public let schemaVersion: UInt32
        /// The payload's fields, in the order they are written.
        public let fields: [PayloadField]
        /// Whether the payload holds personal data, so that a store with a key vault seals it.
        public let carriesPersonalData: Bool
        /// Whether the event changes the account's own state (as opposed to an audit-only security
        /// event, or the storage provider's external values, which have their own view).
        public let changesAccountState: Bool
        /// What the event does to the account's user-id claim.
        public let userIdClaim: UserIdClaim
        /// Makes the event from its fields, read in order.
        let make: @Sendable (inout PayloadFieldReader) throws -> AccountEvent

        init(
            _ name: String, schemaVersion: UInt32 = 1, personalData: Bool, changesState: Bool, claim: UserIdClaim = .none,
            fields: [PayloadField] = [], make: @escaping @Sendable (inout PayloadFieldReader) throws -> AccountEvent
        ) {
            self.name = name
            self.schemaVersion = schemaVersion
            self.fields = fields
            self.carriesPersonalData = personalData
            self.changesAccountState = changesState
            self.userIdClaim = claim
            self.make = make
        }
    }
}

extension AccountEvent.Kind {
    /// The kind's entry in the event catalogue.
    public var declaration: AccountEvent.Declaration { Self.catalogue[Int(rawValue)] }

    /// Every kind's declaration, in case order.
    static let catalogue: [AccountEvent.Declaration] = allCases.map(\.declared)

    /// The event catalogue: one declaration per kind. The switch is exhaustive, so a new kind does
    /// not compile until it is declared here. The compiler then asks for it where behaviour
    /// differs by kind: ``AccountEvent/kind``, ``AccountEvent/encodedPayload()``, `userIdSet`,
    /// ``AccountState/apply(_:version:at:)``, the change budget, ``SchemaEvolution/upcast(_:writtenAt:)``
    /// and the notification feed; the tests ask for a sample event, a row in FORMAT.md and an
    /// entry in `Tools/format-check.py`.
    private var declared: AccountEvent.Declaration {
        switch self {
        case .accountCreated:
            .init(
                "account.created", personalData: true, changesState: true, claim: .takes,
                fields: [.string("userId", role: .userId), .optionalString("passwordHash"), .bool("isAnonymous"), .values("values", role: .values)]
            ) { fields in
                .accountCreated(
                    userId: try fields.string(), passwordHash: try fields.optionalString(), isAnonymous: try fields.bool(),
                    values: try fields.values())
            }
        case .anonymousAccountUpgraded:
            .init(
                "account.anonymous-upgraded", personalData: true, changesState: true, claim: .takes,
                fields: [.string("userId", role: .userId), .optionalString("passwordHash"), .values("values", role: .values)]
            ) { fields in
                .anonymousAccountUpgraded(userId: try fields.string(), passwordHash: try fields.optionalString(), values: try fields.values())
            }
        case .detailsModified:
            .init(
                "account.details-modified", personalData: true, changesState: true,
                fields: [.values("modified", role: .values), .strings("removed", role: .removedIdentifiers)]
            ) { fields in
                .detailsModified(modified: try fields.values(), removed: try fields.strings())
            }
        case .passwordChanged:
            .init("account.password-changed", personalData: true, changesState: true, fields: [.string("passwordHash")]) { fields in
                .passwordChanged(passwordHash: try fields.string())
            }
        case .userIdChanged:
            .init(
                "account.userid-changed", personalData: true, changesState: true, claim: .moves,
                fields: [.string("old"), .string("new", role: .userId)]
            ) { fields in
                .userIdChanged(old: try fields.string(), new: try fields.string())
            }
        case .accountDeleted:
            .init("account.deleted", personalData: false, changesState: true, claim: .releases) { _ in .accountDeleted }
        case .loginSucceeded:
            .init("auth.login-succeeded", personalData: false, changesState: false) { _ in .loginSucceeded }
        case .loginFailed:
            .init("auth.login-failed", personalData: false, changesState: false, fields: [.string("reason")]) { fields in
                .loginFailed(reason: try fields.string())
            }
        case .loggedOut:
            .init("auth.logged-out", personalData: false, changesState: false) { _ in .loggedOut }
        case .passwordResetRequested:
            .init(
                "auth.password-reset-requested", personalData: false, changesState: false,
                fields: [.string("tokenHash"), .varint("expiresAtMicros")]
            ) { fields in
                .passwordResetRequested(tokenHash: try fields.string(), expiresAtMicros: Int64(bitPattern: try fields.varint()))
            }
        case .sessionStarted:
            .init(
                "auth.session-started", personalData: false, changesState: false, fields: [.string("sessionHash"), .varint("expiresAtMicros")]
            ) { fields in
                .sessionStarted(sessionHash: try fields.string(), expiresAtMicros: Int64(bitPattern: try fields.varint()))
            }
        case .sessionEnded:
            .init("auth.session-ended", personalData: false, changesState: false, fields: [.string("sessionHash"), .string("reason")]) { fields in
                .sessionEnded(sessionHash: try fields.string(), reason: try fields.string())
            }
        case .externalDetailsModified:
            .init(
                "external.details-modified", personalData: true, changesState: false,
                fields: [.values("modified", role: .values), .strings("removed", role: .removedIdentifiers)]
            ) { fields in
                .externalDetailsModified(modified: try fields.values(), removed: try fields.strings())
            }
        case .externalDetailsErased:
            .init("external.details-erased", personalData: false, changesState: false) { _ in .externalDetailsErased }
        case .passwordRehashed:
            .init("account.password-rehashed", personalData: true, changesState: true, fields: [.string("passwordHash")]) { fields in
                .passwordRehashed(passwordHash: try fields.string())
            }
        case .identityLinked:
            .init("account.identity-linked", personalData: true, changesState: true, fields: [.string("issuer"), .string("subject")]) { fields in
                .identityLinked(issuer: try fields.string(), subject: try fields.string())
            }
        case .identityUnlinked:
            .init("account.identity-unlinked", personalData: true, changesState: true, fields: [.string("issuer"), .string("subject")]) {
                fields in
                .identityUnlinked(issuer: try fields.string(), subject: try fields.string())
            }
        case .sessionClient:
            .init(
                "auth.session-client", personalData: true, changesState: false,
                fields: [.string("sessionHash"), .string("address"), .string("userAgent")]
            ) { fields in
                .sessionClient(sessionHash: try fields.string(), address: try fields.string(), userAgent: try fields.string())
            }
        case .totpEnrolled:
            .init(
                "auth.totp-enrolled", personalData: true, changesState: false,
                fields: [.string("secret"), .string("algorithm"), .varint("digits"), .varint("period"), .strings("recoveryCodeHashes")]
            ) { fields in
                .totpEnrolled(
                    secret: try fields.string(), algorithm: try fields.string(), digits: try fields.varint(), period: try fields.varint(),
                    recoveryCodeHashes: try fields.strings())
            }
        case .totpConfirmed:
            .init("auth.totp-confirmed", personalData: false, changesState: false, fields: [.varint("step")]) { fields in
                .totpConfirmed(step: try fields.varint())
            }
        case .totpUsed:
            .init("auth.totp-used", personalData: false, changesState: false, fields: [.varint("step")]) { fields in
                .totpUsed(step: try fields.varint())
            }
        case .recoveryCodeUsed:
            .init("auth.recovery-code-used", personalData: false, changesState: false, fields: [.string("codeHash")]) { fields in
                .recoveryCodeUsed(codeHash: try fields.string())
            }
        case .totpRemoved:
            .init("auth.totp-removed", personalData: false, changesState: false, fields: [.string("reason")]) { fields in
                .totpRemoved(reason: try fields.string())
            }
        case .providerTokenStored:
            .init("auth.provider-token-stored", personalData: false, changesState: false, fields: [.string("issuer"), .string("token")]) {
                fields in
                .providerTokenStored(issuer: try fields.string(), token: try fields.string())
            }
        case .providerTokenRevoked:
            .init("auth.provider-token-revoked", personalData: false, changesState: false, fields: [.string("issuer")]) { fields in
                .providerTokenRevoked(issuer: try fields.string())
            }
        case .accountDisabled:
            .init("account.disabled", personalData: true, changesState: false, fields: [.string("reason")]) { fields in
                .accountDisabled(reason: try fields.string())
            }
        case .accountEnabled:
            .init("account.enabled", personalData: true, changesState: false, fields: [.string("reason")]) { fields in
                .accountEnabled(reason: try fields.string())
            }
        }
    }
}

/// Reads a payload's fields in the order a ``AccountEvent/Declaration`` lists them, each under its
/// declared name (for errors); asking for another type than the next field's is a programming
/// error and traps.
struct PayloadFieldReader {
    private var reader: PayloadReader
    private let fields: [PayloadField]
    private var index = 0

    init(_ reader: PayloadReader, fields: [PayloadField]) {
        self.reader = reader
        self.fields = fields
    }

    /// The next declared field, which must be of `type`.
    private mutating func next(_ type: PayloadFieldType) -> String {
        precondition(index < fields.count, "the declaration lists \(fields.count) fields, and a field beyond them was read")
        let field = fields[index]
        precondition(field.type == type, "field \(field.name) is declared \(field.type.rawValue), and was read as \(type.rawValue)")
        index += 1
        return field.name
    }

    mutating func string() throws -> String {
        let name = next(.string)
        return try reader.string(name)
    }

    mutating func optionalString() throws -> String? {
        let name = next(.optionalString)
        return try reader.optionalString(name)
    }

    mutating func bool() throws -> Bool {
        let name = next(.bool)
        return try reader.bool(name)
    }

    mutating func varint() throws -> UInt64 {
        let name = next(.varint)
        return try reader.varint(name)
    }

    mutating func strings() throws -> [String] {
        let name = next(.strings)
        return try reader.strings(name)
    }

    mutating func values() throws -> EncodedAccountValues {
        let name = next(.values)
        return try reader.values(name)
    }

    /// Checks that every declared field was read and no byte is left over.
    func finish() throws {
        precondition(index == fields.count, "the declaration lists \(fields.count) fields, and \(index) were read")
        try reader.finish()
    }
}

/// Writes a payload's fields, checking them against a ``AccountEvent/Declaration`` (type and order)
/// where assertions are on.
struct PayloadFieldWriter {
    private(set) var writer = PayloadWriter()
    private let fields: [PayloadField]
    private var index = 0

    init(fields: [PayloadField]) {
        self.fields = fields
    }

    private mutating func next(_ type: PayloadFieldType) {
        assert(index < fields.count && fields[index].type == type, "field \(index) written as \(type.rawValue) against its declaration")
        index += 1
    }

    mutating func string(_ value: String) {
        next(.string)
        writer.string(value)
    }

    mutating func optionalString(_ value: String?) {
        next(.optionalString)
        writer.optionalString(value)
    }

    mutating func bool(_ value: Bool) {
        next(.bool)
        writer.bool(value)
    }

    mutating func varint(_ value: UInt64) {
        next(.varint)
        writer.varint(value)
    }

    mutating func strings(_ values: [String]) {
        next(.strings)
        writer.strings(values)
    }

    mutating func values(_ values: EncodedAccountValues) {
        next(.values)
        writer.values(values)
    }

    /// The payload; every declared field must have been written.
    func finish() -> [UInt8] {
        assert(index == fields.count, "\(index) of \(fields.count) declared fields written")
        return writer.bytes
    }
}

/// A field's value as the generic reader of declared fields returns it (for tests and tools that
/// compare events field by field, such as the format checker's test).
enum PayloadFieldValue: Equatable {
    case string(String)
    case optionalString(String?)
    case bool(Bool)
    case varint(UInt64)
    case strings([String])
    case values(EncodedAccountValues)
}

extension AccountEvent.Declaration {
    /// Reads a plain payload field by field, as the declaration lists the fields.
    ///
    /// - Parameter payload: An unsealed payload of this kind.
    /// - Returns: Each declared field with its value, in order.
    /// - Throws: ``PayloadDecodingError``, as decoding throws it.
    func readFields(_ payload: UnsafeRawBufferPointer) throws -> [(field: PayloadField, value: PayloadFieldValue)] {
        var reader = try PayloadReader(payload)
        var result: [(field: PayloadField, value: PayloadFieldValue)] = []
        for field in fields {
            let value: PayloadFieldValue =
                switch field.type {
                case .string: .string(try reader.string(field.name))
                case .optionalString: .optionalString(try reader.optionalString(field.name))
                case .bool: .bool(try reader.bool(field.name))
                case .varint: .varint(try reader.varint(field.name))
                case .strings: .strings(try reader.strings(field.name))
                case .values: .values(try reader.values(field.name))
                }
            result.append((field, value))
        }
        try reader.finish()
        return result
    }
}
