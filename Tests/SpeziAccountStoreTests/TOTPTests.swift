//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Foundation
import Testing

@Suite("TOTP (RFC 6238): the Appendix B test vectors, checking codes, the otpauth URI")
struct TOTPTests {
    /// RFC 6238, Appendix B: the seeds for HMAC-SHA1, -SHA256 and -SHA512 (ASCII digits, as long
    /// as each hash's output) and the 8-digit codes at each time.
    static let seeds: [TOTP.Algorithm: String] = [
        .sha1: "12345678901234567890",
        .sha256: "12345678901234567890123456789012",
        .sha512: "1234567890123456789012345678901234567890123456789012345678901234"
    ]

    static let vectors: [(time: TimeInterval, sha1: String, sha256: String, sha512: String)] = [
        (59, "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826")
    ]

    static func totp(_ algorithm: TOTP.Algorithm, digits: Int = 8) throws -> TOTP {
        try TOTP(secret: Array(try #require(seeds[algorithm]).utf8), algorithm: algorithm, digits: digits)
    }

    @Test("every code of Appendix B, for SHA-1, SHA-256 and SHA-512, and its last 6 digits as a 6-digit code")
    func appendixB() throws {
        for vector in Self.vectors {
            let date = Date(timeIntervalSince1970: vector.time)
            for (algorithm, expected) in [(TOTP.Algorithm.sha1, vector.sha1), (.sha256, vector.sha256), (.sha512, vector.sha512)] {
                #expect(try Self.totp(algorithm).code(at: date) == expected, "\(algorithm) at \(vector.time)")
                #expect(try Self.totp(algorithm, digits: 6).code(at: date) == String(expected.suffix(6)), "\(algorithm) at \(vector.time)")
            }
        }
    }

    @Test("a code is accepted in its step and one either side, refused beyond and when wrong or malformed")
    func checking() throws {
        let totp = try Self.totp(.sha1, digits: 6)
        let date = Date(timeIntervalSince1970: 1_111_111_111)
        let step = totp.step(at: date)
        let code = totp.code(at: date)
        #expect(totp.step(matching: code, at: date) == step)
        #expect(totp.step(matching: String(code.prefix(3)) + " " + String(code.suffix(3)), at: date) == step)
        #expect(totp.step(matching: code, at: date.addingTimeInterval(30)) == step)
        #expect(totp.step(matching: code, at: date.addingTimeInterval(-30)) == step)
        #expect(totp.step(matching: code, at: date.addingTimeInterval(90)) == nil)
        #expect(totp.step(matching: code, at: date, window: 0) == step)
        let wrong = String(code.dropLast()) + (code.last == "0" ? "1" : "0")
        #expect(totp.step(matching: wrong, at: date) == nil)
        for malformed in ["", "12345", "1234567", "12a456", "１２３４５６"] { #expect(totp.step(matching: malformed, at: date) == nil) }
    }

    @Test("secrets, digits and periods out of range are refused; new secrets are as long as the hash")
    func parameters() throws {
        #expect(throws: TOTP.InvalidParameters.self) { try TOTP(secret: Array(repeating: 1, count: 15)) }
        #expect(throws: TOTP.InvalidParameters.self) { try TOTP(secret: Array(repeating: 1, count: 20), digits: 7) }
        #expect(throws: TOTP.InvalidParameters.self) { try TOTP(secret: Array(repeating: 1, count: 20), period: 0) }
        for algorithm in TOTP.Algorithm.allCases {
            let secret = TOTP.makeSecret(for: algorithm)
            #expect(secret.count == algorithm.secretBytes)
            #expect(secret != TOTP.makeSecret(for: algorithm))
        }
    }

    @Test("base32 as RFC 4648's examples, and the otpauth URI")
    func uri() throws {
        let examples = ["": "", "f": "MY", "fo": "MZXQ", "foo": "MZXW6", "foob": "MZXW6YQ", "fooba": "MZXW6YTB", "foobar": "MZXW6YTBOI"]
        for (plain, encoded) in examples {
            #expect(TOTP.base32(Array(plain.utf8)) == encoded)
            #expect(TOTP.bytes(base32: encoded) == Array(plain.utf8))
            #expect(TOTP.bytes(base32: encoded.lowercased() + "===") == Array(plain.utf8))
        }
        #expect(TOTP.bytes(base32: "MZXW1") == nil)
        let totp = try Self.totp(.sha1, digits: 6)
        #expect(
            totp.uri(issuer: "Spezi Study", account: "ada@example.org")
                == "otpauth://totp/Spezi%20Study:ada@example.org?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Spezi%20Study"
                + "&algorithm=SHA1&digits=6&period=30")
    }
}
