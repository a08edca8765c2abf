//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import TestSupport
import Testing

@testable import SpeziAccountStore

@Suite("Account event payload coding")
struct AccountEventCodingTests {
    static let samples: [AccountEvent] = [
        .accountCreated(
            userId: "lelandstanford@stanford.edu", passwordHash: "$scrypt$ln=10,r=8,p=1$AAAA$BBBB", isAnonymous: false,
            values: [
                "name": Data(#"{"givenName":"Leland","familyName":"Stanford"}"#.utf8),
                "genderIdentity": Data(#""male""#.utf8),
                "a-key-from-the-future": Data(#"[1,2,3]"#.utf8)
            ]),
        .accountCreated(userId: "anon", passwordHash: nil, isAnonymous: true, values: [:]),
        .anonymousAccountUpgraded(userId: "jane@example.org", passwordHash: "$scrypt$x", values: ["dateOfBirth": Data("712108800".utf8)]),
        .detailsModified(modified: ["biography": Data(#""hi""#.utf8)], removed: ["dateOfBirth", "genderIdentity"]),
        .passwordChanged(passwordHash: "$scrypt$ln=17,r=8,p=1$a$b"),
        .userIdChanged(old: "a@b.c", new: "ä@ö.ü"),
        .accountDeleted, .loginSucceeded, .loginFailed(reason: "wrongPassword"), .loggedOut,
        .passwordResetRequested(tokenHash: String(repeating: "ab", count: 32), expiresAtMicros: 1_800_000_600_000_000),
        .sessionStarted(sessionHash: String(repeating: "cd", count: 32), expiresAtMicros: 1_800_086_400_000_000),
        .sessionEnded(sessionHash: String(repeating: "cd", count: 32), reason: "password-changed"),
        .externalDetailsModified(modified: ["biography": Data(#""ü ß""#.utf8)], removed: ["x"]),
        .externalDetailsErased,
        .passwordRehashed(passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g"),
        .identityLinked(issuer: "https://appleid.apple.com", subject: "001234.abcdef0123456789.0042"),
        .identityUnlinked(issuer: "https://accounts.google.com", subject: "10769150350006150715113082367"),
        .sessionClient(sessionHash: String(repeating: "cd", count: 32), address: "2001:db8:1:2::/64", userAgent: "SpeziApp/1.0 (iPhone; ü)"),
        .totpEnrolled(
            secret: "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", algorithm: "SHA1", digits: 6, period: 30,
            recoveryCodeHashes: [String(repeating: "ef", count: 32), String(repeating: "01", count: 32)]),
        .totpConfirmed(step: 60_000_000), .totpUsed(step: 60_000_001),
        .recoveryCodeUsed(codeHash: String(repeating: "ef", count: 32)), .totpRemoved(reason: "recovery-code"),
        .providerTokenStored(issuer: "https://appleid.apple.com", token: "v1:AAEC"), .providerTokenRevoked(issuer: "https://appleid.apple.com"),
        .accountDisabled(reason: "asked by its owner, ü"), .accountEnabled(reason: "resolved")
    ]

    @Test("every event round-trips through its payload", arguments: samples)
    func roundTrip(event: AccountEvent) throws {
        let payload = event.encodedPayload()
        #expect(payload.first == 1)
        #expect(try AccountEvent.decode(type: event.typeName, payload: payload) == event)
        #expect(AccountEvent.currentSchemaVersions[event.typeName] == event.schemaVersion)
    }

    @Test("the encoding is deterministic (identifiers in order)")
    func deterministic() {
        let event = Self.samples[0]
        #expect(event.encodedPayload() == event.encodedPayload())
        let reordered = AccountEvent.accountCreated(
            userId: "lelandstanford@stanford.edu", passwordHash: "$scrypt$ln=10,r=8,p=1$AAAA$BBBB", isAnonymous: false,
            values: [
                "a-key-from-the-future": Data(#"[1,2,3]"#.utf8),
                "genderIdentity": Data(#""male""#.utf8),
                "name": Data(#"{"givenName":"Leland","familyName":"Stanford"}"#.utf8)
            ])
        #expect(reordered.encodedPayload() == event.encodedPayload())
    }

    @Test("every truncation of a payload is a typed error, never a trap", arguments: samples)
    func truncations(event: AccountEvent) {
        let payload = event.encodedPayload()
        for length in 0..<payload.count {
            #expect(throws: PayloadDecodingError.self) {
                try AccountEvent.decode(type: event.typeName, payload: Array(payload.prefix(length)))
            }
        }
    }

    @Test("hostile lengths, tags, versions and types are refused with a named field")
    func hostile() {
        #expect(throws: PayloadDecodingError.unsupportedEncoding(9)) {
            try AccountEvent.decode(type: "auth.logged-out", payload: [9])
        }
        #expect(throws: PayloadDecodingError.trailingBytes(count: 2)) {
            try AccountEvent.decode(type: "auth.logged-out", payload: [1, 0, 0])
        }
        #expect(throws: PayloadDecodingError.unknownEventType("account.exploded")) {
            try AccountEvent.decode(type: "account.exploded", payload: [1])
        }
        // A string claiming 2^60 bytes.
        #expect(throws: PayloadDecodingError.lengthOutOfRange(field: "reason", length: 1 << 60, offset: 1)) {
            try AccountEvent.decode(type: "auth.login-failed", payload: [1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10])
        }
        // An endless varint.
        #expect(throws: PayloadDecodingError.self) {
            try AccountEvent.decode(type: "auth.login-failed", payload: [1] + Array(repeating: 0xFF, count: 20))
        }
        // A bool that is neither 0 nor 1.
        #expect(throws: PayloadDecodingError.invalidTag(field: "passwordHash", tag: 7, offset: 3)) {
            try AccountEvent.decode(type: "account.created", payload: [1, 1, 0x41, 7])
        }
        // Invalid UTF-8.
        #expect(throws: PayloadDecodingError.invalidUTF8(field: "reason", offset: 1)) {
            try AccountEvent.decode(type: "auth.login-failed", payload: [1, 2, 0xC3, 0x28])
        }
    }

    @Test("random bytes never trap the decoder, and whatever decodes is stable (10,000 inputs per type)")
    func randomInputs() throws {
        var generator = SplitMix64(seed: 7)
        var decoded = 0
        for type in AccountEvent.currentSchemaVersions.keys.sorted() {
            for _ in 0..<10_000 {
                let length = Int.random(in: 0...48, using: &generator)
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if !bytes.isEmpty { bytes[0] = 1 }
                guard let event = try? AccountEvent.decode(type: type, payload: bytes) else { continue }
                decoded += 1
                #expect(event.typeName == type)
                #expect(try AccountEvent.decode(type: type, payload: event.encodedPayload()) == event)
            }
        }
        // Payload-less types accept exactly [1]; the others need well-formed fields.
        #expect(decoded > 0)
    }

    @Test("mutations of every sample's payload (types with fields too): whatever decodes re-encodes to an equal event")
    func mutatedSamples() throws {
        var generator = SplitMix64(seed: 11)
        var decodedPerType: [String: Int] = [:]
        for sample in Self.samples {
            let payload = sample.encodedPayload()
            for _ in 0..<2_000 {
                var bytes = payload
                // One to three changes: a flipped byte, a byte dropped, or a byte added.
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let index = bytes.isEmpty ? 0 : Int.random(in: 1..<max(bytes.count, 2), using: &generator) % max(bytes.count, 1)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0 where !bytes.isEmpty: bytes[index] ^= UInt8.random(in: 1...255, using: &generator)
                    case 1 where bytes.count > 1: bytes.remove(at: max(index, 1))
                    default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: min(max(index, 1), bytes.count))
                    }
                }
                guard let event = try? AccountEvent.decode(type: sample.typeName, payload: bytes) else { continue }
                decodedPerType[sample.typeName, default: 0] += 1
                #expect(event.typeName == sample.typeName)
                #expect(try AccountEvent.decode(type: sample.typeName, payload: event.encodedPayload()) == event)
            }
        }
        // Mutated payloads of types with fields decode often (a changed character of a string),
        // so the stability check above ran on them, not only on the payload-less types.
        for type in Set(Self.samples.filter { $0.encodedPayload().count > 1 }.map(\.typeName)) {
            #expect((decodedPerType[type] ?? 0) > 20, "\(type): \(decodedPerType[type] ?? 0) decoded")
        }
    }
}

extension AccountEvent: CustomTestStringConvertible {
    public var testDescription: String { typeName }
}
