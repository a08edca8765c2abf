//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLog
import EventLogProtocol
import Foundation
import SpeziAccountStore

/// The account events every back end stores: made from fixed seeds, so that each child process
/// (and each back end) gets the same bytes without keeping a million events in memory.
///
/// The 1 M-event set is `accounts` accounts with ten events each: one `account.created` (e-mail
/// user id, an scrypt hash string, name, date of birth, gender identity) and nine
/// `account.details-modified` (two or three of: name, biography, phone number, date of birth,
/// gender identity). Each account is written in two commits of five events, first for every
/// account, then again for every account, so that folding it touches each account twice, far apart.
enum Dataset {
    static let eventsPerAccount = 10
    static let eventsPerCommit = 5

    /// The account id of account `index`: a lowercase UUID string, as the store makes them.
    static func accountId(_ index: Int) -> String {
        var generator = SplitMix64(seed: 0xACC0_0000 &+ UInt64(index))
        var bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Event `index` (0-based) of account `account`.
    static func event(account: Int, index: Int) -> AccountEvent {
        var generator = SplitMix64(seed: UInt64(account) &* 0x1_0000_0001 &+ UInt64(index) &+ 0x5EED)
        return index == 0 ? created(account: account, &generator) : modified(&generator)
    }

    static func created(account: Int, _ generator: inout SplitMix64) -> AccountEvent {
        let given = pick(givenNames, &generator)
        let family = pick(familyNames, &generator)
        let userId = "\(given.lowercased()).\(family.lowercased()).\(account)@example.org"
        return .accountCreated(
            userId: userId, passwordHash: passwordHash(&generator), isAnonymous: false,
            values: [
                "name": json(#"{"familyName":"\#(family)","givenName":"\#(given)"}"#),
                "dateOfBirth": json(dateOfBirth(&generator)),
                "genderIdentity": json(#""\#(pick(genders, &generator))""#)
            ])
    }

    static func modified(_ generator: inout SplitMix64) -> AccountEvent {
        var values: EncodedAccountValues = ["biography": json(#""\#(biography(&generator))""#)]
        let extras = 1 + Int(generator.next() % 2)
        for _ in 0..<extras {
            switch generator.next() % 4 {
            case 0: values["name"] = json(#"{"familyName":"\#(pick(familyNames, &generator))","givenName":"\#(pick(givenNames, &generator))"}"#)
            case 1: values["phoneNumber"] = json(#""+1 650 555 \#(1_000 + generator.next() % 9_000)""#)
            case 2: values["dateOfBirth"] = json(dateOfBirth(&generator))
            default: values["genderIdentity"] = json(#""\#(pick(genders, &generator))""#)
            }
        }
        return .detailsModified(modified: values, removed: [])
    }

    /// An scrypt hash string of the store's form, with random salt and key.
    static func passwordHash(_ generator: inout SplitMix64) -> String {
        "$scrypt$ln=17,r=8,p=1$\(base64(16, &generator))$\(base64(32, &generator))"
    }

    /// The record the log stores for `event`: the store's metadata (actor, key-set version) and
    /// the encoded payload, with an event id from the seed.
    static func proposed(_ event: AccountEvent, id: UInt64) -> ProposedEvent {
        var generator = SplitMix64(seed: id)
        let eventID = UUID(uuid: uuidBytes(&generator))
        return ProposedEvent(
            eventID: eventID, type: event.typeName, schemaVersion: event.schemaVersion,
            metadata: metadata, payload: Data(event.encodedPayload()))
    }

    /// What `AccountLog.append` records with every event.
    static let metadata = EventMetadata(actor: "bench", extra: [SchemaEvolution.metadataKey: "1"])

    /// The raw loop's one-byte type tags.
    static let typeNames = AccountEvent.currentSchemaVersions.keys.sorted()
    static let typeTags = Dictionary(uniqueKeysWithValues: typeNames.enumerated().map { ($1, UInt8($0)) })

    /// The mean payload size of the first `accounts` accounts' events (a sample of them when many).
    static func meanPayloadBytes(accounts: Int) -> Double {
        let sample = min(accounts, 2_000)
        var bytes = 0
        for account in 0..<sample {
            for index in 0..<eventsPerAccount { bytes += event(account: account, index: index).encodedPayload().count }
        }
        return Double(bytes) / Double(sample * eventsPerAccount)
    }

    // MARK: Values

    private static func json(_ text: String) -> Data { Data(text.utf8) }

    private static func pick(_ list: [String], _ generator: inout SplitMix64) -> String {
        list[Int(generator.next() % UInt64(list.count))]
    }

    /// Seconds since 2001 (how Foundation's JSONEncoder writes a date), between 1940 and 2006.
    private static func dateOfBirth(_ generator: inout SplitMix64) -> String {
        String(-1_924_992_000 + Int(generator.next() % 2_082_844_800))
    }

    private static func biography(_ generator: inout SplitMix64) -> String {
        let length = 150 + Int(generator.next() % 150)
        var text = ""
        text.reserveCapacity(length + 16)
        while text.utf8.count < length {
            if !text.isEmpty { text += " " }
            text += pick(words, &generator)
        }
        return text
    }

    private static func base64(_ count: Int, _ generator: inout SplitMix64) -> String {
        Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).base64EncodedString()
            .replacingOccurrences(of: "=", with: "")
    }

    static func uuidBytes(_ generator: inout SplitMix64) -> uuid_t {
        let high = generator.next()
        let low = generator.next()
        func byte(_ word: UInt64, _ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: word >> (8 * index)) }
        return (
            byte(high, 0), byte(high, 1), byte(high, 2), byte(high, 3), byte(high, 4), byte(high, 5), byte(high, 6) & 0x0F | 0x40, byte(high, 7),
            byte(low, 0) & 0x3F | 0x80, byte(low, 1), byte(low, 2), byte(low, 3), byte(low, 4), byte(low, 5), byte(low, 6), byte(low, 7)
        )
    }

    private static let givenNames = [
        "Ada", "Grace", "Alan", "Barbara", "Donald", "Edsger", "Frances", "Hedy", "John", "Katherine",
        "Leslie", "Margaret", "Niklaus", "Radia", "Tim", "Whitfield", "Shafi", "Yukihiro", "Sophie", "Ken"
    ]
    private static let familyNames = [
        "Lovelace", "Hopper", "Turing", "Liskov", "Knuth", "Dijkstra", "Allen", "Lamarr", "Backus", "Johnson",
        "Lamport", "Hamilton", "Wirth", "Perlman", "Berners-Lee", "Diffie", "Goldwasser", "Matsumoto", "Wilson", "Thompson"
    ]
    private static let genders = ["female", "male", "transgender", "nonBinary", "preferNotToState"]
    private static let words = [
        "enjoys", "hiking", "and", "reading", "about", "the", "history", "of", "computing", "cardiology", "patient",
        "since", "2019", "walks", "ten", "thousand", "steps", "most", "days", "prefers", "morning", "reminders",
        "study", "participant", "in", "a", "sleep", "trial", "likes", "cycling", "with", "friends", "on", "weekends"
    ]
}
