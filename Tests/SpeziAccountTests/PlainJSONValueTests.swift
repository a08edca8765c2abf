//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Testing

/// Details read from per-key JSON take a shortcut for plain strings, numbers, dates and gender
/// identities: every value here must come out exactly as JSONDecoder reads it, and every value
/// JSONDecoder rejects must still be rejected.
@Suite("Plain JSON values")
struct PlainJSONValueTests {
    enum Outcome<Value: Equatable>: Equatable {
        case success(Value)
        case failure(String)
    }

    /// What `AccountDetails(perKey:)` makes of `json` under `key`, or the error's type.
    private func read<Key: AccountKey>(_ key: Key.Type, _ json: String) -> Outcome<Key.Value> {
        do {
            let details = try AccountDetails(perKey: [Key.identifier: Data(json.utf8)])
            guard let value = details[Key.self] else { return .failure("missing") }
            return .success(value)
        } catch {
            return .failure("\(type(of: error))")
        }
    }

    /// What JSONDecoder alone makes of it.
    private func reference<Value: Decodable & Equatable>(_ type: Value.Type, _ json: String) -> Outcome<Value> {
        do {
            return .success(try JSONDecoder().decode(Value.self, from: Data(json.utf8)))
        } catch {
            return .failure("\(Swift.type(of: error))")
        }
    }

    @Test("strings: plain ones, escapes, non-ASCII, whitespace and malformed ones read as JSONDecoder reads them")
    func strings() {
        let inputs = [
            #""ada@example.org""#, #""""#, #""with \"quotes\"""#, #""tab\there""#, #""\u00e9t\u00e9""#, #""été""#, #" "padded" "#,
            #""unterminated"#, #"unquoted"#, #""a"b""#, "\"control\u{1}\"", "42", "null", #"["array"]"#
        ]
        for json in inputs {
            #expect(read(AccountDetails.__Key_email.self, json) == reference(String.self, json), "\(json)")
        }
        #expect(read(AccountDetails.__Key_email.self, #""ada@example.org""#) == .success("ada@example.org"))
    }

    @Test("strings checked eight bytes at a time: each special byte, at each place of strings up to 40 bytes, read as JSONDecoder reads it")
    func stringsByWord() {
        // Control bytes, the quote and the backslash, a byte above ASCII, and the plain
        // neighbours of each (space, `!`, `#`, `[`, `]`, DEL).
        let specials: [[UInt8]] = [[0x01], [0x1F], [0x22], [0x5C], [0xC3, 0xA9], [0x20], [0x21], [0x23], [0x5B], [0x5D], [0x7F]]
        var mismatches: [String] = []
        for length in 1...40 {
            let plain = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            for place in 0..<length {
                for special in specials {
                    var inner = plain
                    inner.replaceSubrange(place..<(place + 1), with: special)
                    let json = String(decoding: [0x22] + inner + [0x22], as: UTF8.self)
                    if read(AccountDetails.__Key_email.self, json) != reference(String.self, json) { mismatches.append(json) }
                }
            }
            let json = String(decoding: [0x22] + plain + [0x22], as: UTF8.self)
            #expect(read(AccountDetails.__Key_email.self, json) == .success(String(decoding: plain, as: UTF8.self)))
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test("dates (seconds since 2001) read as JSONDecoder reads them, edge cases of the number grammar included")
    func dates() {
        let inputs = [
            "0", "-0", "-1924992000", "157766400", "1.5", "-0.25", "1e3", "1E+3", "2.5e-2", "123456789.123456789",
            "01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "inf", "nan", "1e400", " 12", "12 ", "\"12\"", "true"
        ]
        for json in inputs {
            #expect(read(AccountDetails.__Key_dateOfBirth.self, json) == reference(Date.self, json), "\(json)")
        }
        #expect(read(AccountDetails.__Key_dateOfBirth.self, "1e3") == .success(Date(timeIntervalSinceReferenceDate: 1_000)))
    }

    @Test("gender identities: known raw values, unknown ones and other JSON")
    func genders() {
        for json in [#""female""#, #""nonBinary""#, #""preferNotToState""#, #""Female""#, #""unknown""#, #""fem\u0061le""#, "1", "null"] {
            #expect(read(AccountDetails.__Key_genderIdentity.self, json) == reference(GenderIdentity.self, json), "\(json)")
        }
        #expect(read(AccountDetails.__Key_genderIdentity.self, #""male""#) == .success(.male))
    }

    @Test("names: the encoder's flat objects, and everything else a shortcut must leave to JSONDecoder")
    func names() {
        let inputs = [
            #"{"familyName":"Lovelace","givenName":"Ada"}"#, "{}", #"{"nickname":"Grace"}"#,
            #"{"namePrefix":"Dr.","givenName":"A","middleName":"B","familyName":"C","nameSuffix":"Jr.","nickname":"D"}"#,
            #"{ "givenName": "Ada" }"#, #"{"givenName":"Ada","givenName":"Bea"}"#, #"{"givenName":"A\"da"}"#, #"{"givenName":"Ada",}"#,
            #"{"unknownPart":"x"}"#, #"{"givenName":1}"#, #"{"givenName":null}"#, #"{"givenName":"Ada""#, "{,}", "[]", #""Ada""#
        ]
        for json in inputs {
            #expect(read(AccountDetails.__Key_name.self, json) == reference(PersonNameComponents.self, json), "\(json)")
        }
    }

    @Test("values of unknown keys: strings, booleans and null take the shortcut; all read as JSONDecoder reads them")
    func unknownValues() throws {
        let inputs = [#""text""#, "true", "false", "null", "12", "-1.5", "1e3", #"["a",1]"#, #"{"a":true}"#, #""caf\u00e9""#, " true"]
        for json in inputs {
            let expected: Outcome<RawAccountValue> = reference(RawAccountValue.self, json)
            let actual: Outcome<RawAccountValue>
            do {
                let details = try AccountDetails(perKey: ["someFutureKey": Data(json.utf8)])
                actual = details.unknownValues["someFutureKey"].map { .success($0) } ?? .failure("missing")
            } catch {
                actual = .failure("\(type(of: error))")
            }
            #expect(actual == expected, "\(json)")
        }
    }
}
