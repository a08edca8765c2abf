//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import EventLogProtocol
import Foundation
import LogRecordFormat
import TestSupport
import Testing

@testable import AccountSecurity
@testable import EventLog
@testable import SpeziAccountStore

/// Property tests of every decoder that reads bytes from disk or from an import file: seeded
/// mutations of valid encodings (bit flips, overwritten, inserted, removed and duplicated bytes,
/// huge length prefixes, truncation) and pure noise. Each input must be refused with a typed
/// error or decoded into a value that encodes back to itself: never a crash, a hang, or an
/// allocation larger than the input allows (lengths are checked against the bytes left before
/// anything is allocated; a violation would show here as a crash or an out-of-memory kill).
@Suite("Hostile input: decoder fuzzing")
struct DecoderFuzzTests {
    /// Turns a valid encoding into a damaged one.
    struct Mutator {
        var generator: SplitMix64

        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }
        mutating func byte() -> UInt8 { UInt8.random(in: 0...255, using: &generator) }

        mutating func mutate(_ seed: [UInt8]) -> [UInt8] {
            var bytes = seed
            for _ in 0..<int(1...4) {
                switch int(0...8) {
                case 0 where !bytes.isEmpty: bytes[int(0...bytes.count - 1)] ^= 1 << UInt8(int(0...7))
                case 1 where !bytes.isEmpty: bytes[int(0...bytes.count - 1)] = byte()
                case 2: bytes.insert(contentsOf: (0..<int(1...16)).map { _ in byte() }, at: int(0...bytes.count))
                case 3 where !bytes.isEmpty:
                    let start = int(0...bytes.count - 1)
                    bytes.removeSubrange(start..<min(bytes.count, start + int(1...16)))
                case 4: bytes = Array(bytes.prefix(int(0...bytes.count)))
                case 5 where !bytes.isEmpty:
                    // A varint or length field turned huge.
                    let start = int(0...bytes.count - 1)
                    for index in start..<min(bytes.count, start + int(1...9)) { bytes[index] = 0xFF }
                case 6 where bytes.count > 1:
                    let start = int(0...bytes.count - 2)
                    let chunk = bytes[start..<min(bytes.count, start + int(1...32))]
                    bytes.insert(contentsOf: chunk, at: int(0...bytes.count))
                case 7 where !bytes.isEmpty: bytes[int(0...bytes.count - 1)] = [0, 0x7F, 0x80, 0xFF][int(0...3)]
                default: bytes = (0..<int(0...64)).map { _ in byte() }
                }
            }
            return bytes
        }
    }

    private static let values: EncodedAccountValues = [
        "userId": Data("leland@stanford.edu".utf8), "name": Data(#"{"givenName":"Leland"}"#.utf8),
        "dateOfBirth": Data([0x41, 0xC2, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]), "genderIdentity": Data("male".utf8)
    ]

    static let events: [AccountEvent] = [
        .accountCreated(userId: "leland@stanford.edu", passwordHash: "$scrypt$ln=17,r=8,p=1$c2FsdA$aGFzaA", isAnonymous: false, values: values),
        .anonymousAccountUpgraded(userId: "jane@stanford.edu", passwordHash: nil, values: values),
        .detailsModified(modified: values, removed: ["biography", "phoneNumbers"]),
        .passwordChanged(passwordHash: "$scrypt$ln=17,r=8,p=1$c2FsdA$aGFzaA"),
        .userIdChanged(old: "a@b.c", new: "d@e.f"), .accountDeleted, .loginSucceeded,
        .loginFailed(reason: "wrongPassword"), .loggedOut,
        .externalDetailsModified(modified: values, removed: ["x"]), .externalDetailsErased,
        .sessionStarted(sessionHash: String(repeating: "0f", count: 32), expiresAtMicros: 1_800_000_000_000_000),
        .sessionEnded(sessionHash: String(repeating: "0f", count: 32), reason: "logout")
        // (.redacted is what a shredded payload decodes to; it is never written.)
    ]

    @Test("account event payloads: 65,000 mutated inputs, each refused with a typed error or decoded canonically")
    func accountEvents() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0xACC0_0E7E))
        var accepted = 0
        var refused = 0
        for event in Self.events {
            let seed = event.encodedPayload()
            #expect(try AccountEvent.decode(type: event.typeName, payload: seed) == event)
            for _ in 0..<5_000 {
                let input = mutator.mutate(seed)
                do {
                    let decoded = try AccountEvent.decode(type: event.typeName, payload: input)
                    // What decodes must encode back into something that decodes to the same event.
                    #expect(try AccountEvent.decode(type: event.typeName, payload: decoded.encodedPayload()) == decoded)
                    accepted += 1
                } catch is PayloadDecodingError {
                    refused += 1
                } catch {
                    Issue.record("an untyped error: \(error)")
                }
            }
        }
        print("account event fuzz: \(accepted + refused) inputs, \(accepted) decoded, \(refused) refused")
        #expect(accepted + refused == 65_000)
    }

    @Test("account event views: 65,000 mutated inputs, each refused with decoding's error or read as decoding reads it")
    func accountEventViews() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0x0E7E_71E3))
        var (accepted, refused) = (0, 0)
        for event in Self.events {
            let seed = event.encodedPayload()
            for attempt in 0..<5_000 {
                let input = attempt == 0 ? seed : mutator.mutate(seed)
                guard let kind = AccountEvent.Kind(name: event.typeName) else {
                    Issue.record("no kind for \(event.typeName)")
                    return
                }
                let decoded = Result { try input.withUnsafeBytes { try AccountEvent.decode(kind, payload: $0) } }
                try input.withUnsafeBytes { bytes in
                    switch (decoded, Result { try AccountEventView(kind, payload: bytes) }) {
                    case let (.success(event), .success(view)):
                        try Self.expect(view, reads: event)
                        accepted += 1
                    case let (.failure(expected), .failure(actual)):
                        #expect(actual as? PayloadDecodingError == expected as? PayloadDecodingError)
                        refused += 1
                    case let (expected, actual):
                        Issue.record("decoding gave \(expected), the view \(actual)")
                    }
                }
            }
        }
        print("account event views: \(accepted) read, \(refused) refused")
        #expect(accepted + refused == 65_000 && accepted > 13 && refused > 30_000)
    }

    /// Checks that every field a view offers equals the decoded event's.
    static func expect(_ view: AccountEventView, reads event: AccountEvent) throws {
        #expect(try view.event() == event)
        #expect(view.kind.name == event.typeName)
        let (userId, values, removed): (String?, EncodedAccountValues, [String]) =
            switch event {
            case let .accountCreated(userId, _, _, values), let .anonymousAccountUpgraded(userId, _, values): (userId, values, [])
            case let .detailsModified(values, removed), let .externalDetailsModified(values, removed): (nil, values, removed)
            case let .userIdChanged(_, new): (new, [:], [])
            default: (nil, [:], [])
            }
        #expect(view.userId == userId)
        #expect(view.removedIdentifiers == removed)
        #expect(view.values.dictionary() == values)
        #expect(view.values.isEmpty == values.isEmpty)
        // An identifier written twice counts as two entries; the last one's value is the map's.
        let identifiers = view.values.identifiers
        #expect(identifiers.count == view.values.count && Set(identifiers) == Set(values.keys))
        for identifier in identifiers { #expect(view.values[identifier] == values[identifier]) }
        #expect(view.values["not an identifier"] == nil)
        var entries = 0
        view.values.forEachEntry { identifier, value in
            entries += 1
            #expect(values[String(decoding: identifier, as: UTF8.self)] != nil && value.count <= 1_000)
        }
        #expect(entries == view.values.count)
    }

    @Test(
        "a details-modified payload applied straight from its bytes: the state of decoding it first, or the same error and no change (20,000 mutated inputs)"
    )
    func directDetailsModified() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0xD1_2EC7))
        let time = Date(timeIntervalSince1970: 1_000)
        var base = AccountState(
            accountId: "a1", userId: "leland@stanford.edu", passwordHash: nil, isAnonymous: false,
            values: ["biography": Data(#""a long biography, longer than fourteen bytes""#.utf8), "phoneNumbers": Data("[]".utf8)], version: 1,
            at: time)
        base.apply(.loginFailed(reason: "wrongPassword"), version: 2, at: time)
        let seeds = [
            AccountEvent.detailsModified(modified: Self.values, removed: ["biography", "phoneNumbers"]),
            .detailsModified(modified: ["biography": Data(#""another biography, also long""#.utf8)], removed: []),
            .detailsModified(modified: [:], removed: ["phoneNumbers", "nothing"])
        ].map { $0.encodedPayload() }
        var (applied, refused) = (0, 0)
        for seed in seeds {
            for attempt in 0..<6_667 {
                let input = attempt == 0 ? seed : mutator.mutate(seed)
                var direct = base
                let outcome = Result { try input.withUnsafeBytes { try direct.applyDetailsModified(payload: $0, version: 3, at: time + 5) } }
                switch Result(catching: { try AccountEvent.decode(type: "account.details-modified", payload: input) }) {
                case let .success(event):
                    var decoded = base
                    decoded.apply(event, version: 3, at: time + 5)
                    #expect((try? outcome.get()) != nil)
                    #expect(direct == decoded)
                    applied += 1
                case let .failure(error):
                    #expect(outcome.failureDescription == String(describing: error))
                    #expect(direct == base, "a refused payload changes nothing")
                    refused += 1
                }
            }
        }
        print("direct details-modified: \(applied) applied, \(refused) refused")
        #expect(applied > 3 && refused > 10_000)
    }

    @Test("cached account states: 20,000 mutated inputs")
    func accountStates() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0x57A7_E5))
        let state = AccountState(
            accountId: "A1", userId: "leland@stanford.edu", passwordHash: "$scrypt$x", isAnonymous: false,
            values: Self.values, version: 7, at: Date(timeIntervalSince1970: 1_700_000_000))
        let seed = state.encoded()
        var refused = 0
        for _ in 0..<20_000 {
            let input = mutator.mutate(seed)
            do {
                let decoded = try AccountState(encoded: input)
                #expect(try AccountState(encoded: decoded.encoded()) == decoded)
            } catch is PayloadDecodingError {
                refused += 1
            } catch {
                Issue.record("an untyped error: \(error)")
            }
        }
        print("account state fuzz: 20000 inputs, \(refused) refused")
        #expect(refused > 10_000)
    }

    @Test("sealed envelopes: every changed one of 20,000 mutated inputs is refused by authentication")
    func sealedEnvelopes() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0x5EA1))
        let key = SymmetricKey(size: .bits256)
        let seed = try Sealing.seal(Array("Leland Stanford".utf8), key: key, accountId: "A1", label: "account.created")
        var refused = 0
        var tried = 0
        for _ in 0..<20_000 {
            let input = mutator.mutate(seed)
            guard input != seed else { continue }
            tried += 1
            let opened = try? input.withUnsafeBytes { try Sealing.open($0, key: key, accountId: "A1", label: "account.created") }
            if opened == nil { refused += 1 }
        }
        print("sealed envelope fuzz: \(tried) changed envelopes, \(refused) refused")
        #expect(refused == tried && tried > 19_000)
    }

    /// A valid log record at position 9, as the log writes it.
    static func validRecord() throws -> [UInt8] {
        let event = ProposedEvent(
            type: "account.created", metadata: EventMetadata(actor: "service", correlationID: "c-1", extra: ["origin": "test"]),
            payload: Data(events[0].encodedPayload()))
        let pairs = [("actor", "service"), ("origin", "test")]
        let size = try RecordFormat.encodedSize(streamID: "account-A1", event: event, pairs: pairs, maxPayload: 1 << 20)
        var record = [UInt8](repeating: 0, count: size)
        record.withUnsafeMutableBytes { buffer in
            _ = RecordFormat.write(
                into: buffer, position: 9, streamVersion: 3, timestampMicros: 1_700_000_000_000_000,
                streamID: "account-A1", event: event, pairs: pairs, previous: .genesis)
        }
        return record
    }

    @Test("log records: 40,000 mutated records, half with a recomputed checksum so the layout checks are reached")
    func records() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0x2EC0_2D))
        let seed = try Self.validRecord()
        #expect(throws: Never.self) { try seed.withUnsafeBytes { try RecordView($0, position: 9, path: "fuzz").decoded() } }
        var accepted = 0
        var refused = 0
        for iteration in 0..<40_000 {
            var input = mutator.mutate(seed)
            if iteration % 2 == 0, input.count >= 4 {
                let checksum = CRC32C.checksum(Array(input[4...]))
                input.replaceSubrange(0..<4, with: withUnsafeBytes(of: checksum.bigEndian) { Array($0) })
            }
            do {
                let decoded = try input.withUnsafeBytes { try RecordView($0, position: 9, path: "fuzz").decoded() }
                // What is accepted reads the same every time, at the position it is stored under.
                let again = try input.withUnsafeBytes { try RecordView($0, position: 9, path: "fuzz").decoded() }
                #expect(decoded == again && decoded.position == 9)
                accepted += 1
            } catch let EventLogError.corruptRecord(position, reason, path) {
                // A refusal is the typed one, naming the record and why.
                #expect(position == 9 && path == "fuzz" && !reason.isEmpty)
                refused += 1
            } catch {
                Issue.record("an input was refused with an untyped error: \(error)")
            }
        }
        print("record fuzz: 40000 inputs, \(accepted) decoded, \(refused) refused")
        #expect(refused > 20_000)
        #expect(accepted + refused == 40_000)
    }

    @Test("export lines: 10,000 mutated JSON lines are refused or decoded, never a crash")
    func exportLines() throws {
        var mutator = Mutator(generator: SplitMix64(seed: 0x150_17E5))
        let record = ExportedRecord(try Self.validRecord().withUnsafeBytes { try RecordView($0, position: 9, path: "fuzz").decoded() })
        let seed = Array(try JSONEncoder().encode(record))
        var refused = 0
        for _ in 0..<10_000 {
            if (try? JSONDecoder().decode(ExportedRecord.self, from: Data(mutator.mutate(seed)))) == nil { refused += 1 }
        }
        print("export line fuzz: 10000 inputs, \(refused) refused")
        #expect(refused > 5_000)
    }
}

extension Result where Failure == any Error {
    /// The error's description, nil on success.
    fileprivate var failureDescription: String? {
        if case let .failure(error) = self { return String(describing: error) }
        return nil
    }
}
