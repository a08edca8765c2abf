//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation

/// Time-based one-time passwords (RFC 6238): the codes an authenticator app shows, HOTP (RFC 4226)
/// over the number of periods since 1970.
///
/// ```swift
/// let totp = try TOTP(secret: TOTP.makeSecret())
/// let code = totp.code(at: Date())            // "492039"
/// totp.step(matching: code, at: Date())       // the time step it belongs to, or nil
/// ```
public struct TOTP: Sendable, Equatable {
    /// The HMAC's hash function (the `algorithm` of an `otpauth://` URI).
    public enum Algorithm: String, Sendable, CaseIterable {
        /// HMAC-SHA1, what authenticator apps assume when a URI names none.
        case sha1 = "SHA1"
        /// HMAC-SHA256.
        case sha256 = "SHA256"
        /// HMAC-SHA512.
        case sha512 = "SHA512"

        /// The secret length RFC 6238's reference uses: the hash's output length.
        public var secretBytes: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            case .sha512: 64
            }
        }
    }

    /// A secret, code length or period that TOTP does not take.
    public struct InvalidParameters: Error, CustomStringConvertible {
        /// What is wrong.
        public let description: String
    }

    /// The shared secret.
    public let secret: [UInt8]
    /// The HMAC's hash function.
    public let algorithm: Algorithm
    /// The code's length: 6 or 8 digits.
    public let digits: Int
    /// The length of a time step, in seconds.
    public let period: Int

    /// A generator and checker of codes.
    ///
    /// - Parameters:
    ///   - secret: The shared secret: 16 to 64 bytes (RFC 4226 asks for at least 128 bits).
    ///   - algorithm: The HMAC's hash function; SHA-1 by default.
    ///   - digits: 6 (the default) or 8.
    ///   - period: Seconds per code, 30 by default (1 to 300).
    /// - Throws: ``InvalidParameters`` for anything outside those ranges.
    public init(secret: [UInt8], algorithm: Algorithm = .sha1, digits: Int = 6, period: Int = 30) throws {
        guard (16...64).contains(secret.count) else { throw InvalidParameters(description: "a TOTP secret has 16 to 64 bytes") }
        guard digits == 6 || digits == 8 else { throw InvalidParameters(description: "a TOTP code has 6 or 8 digits") }
        guard (1...300).contains(period) else { throw InvalidParameters(description: "a TOTP period is 1 to 300 seconds") }
        self.secret = secret
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
    }

    /// A new random secret, as long as the algorithm's output (``Algorithm/secretBytes``).
    ///
    /// - Parameter algorithm: The algorithm the secret is for.
    /// - Returns: Random bytes from the system's generator.
    public static func makeSecret(for algorithm: Algorithm = .sha1) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<algorithm.secretBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The time step of `date`: whole periods since 1970 (0 before it).
    ///
    /// - Parameter date: A moment.
    /// - Returns: The step number (RFC 6238's T).
    public func step(at date: Date) -> UInt64 {
        let seconds = date.timeIntervalSince1970
        guard seconds > 0 else { return 0 }
        return UInt64(seconds.rounded(.down)) / UInt64(period)
    }

    /// The code shown at `date`.
    ///
    /// - Parameter date: A moment.
    /// - Returns: The code, ``digits`` decimal digits with leading zeros.
    public func code(at date: Date) -> String {
        code(step: step(at: date))
    }

    /// The code of time step `step` (HOTP with the step as its counter).
    ///
    /// - Parameter step: The counter.
    /// - Returns: The code, ``digits`` decimal digits with leading zeros.
    public func code(step: UInt64) -> String {
        let counter = withUnsafeBytes(of: step.bigEndian) { Array($0) }
        let key = SymmetricKey(data: secret)
        let mac: [UInt8] =
            switch algorithm {
            case .sha1: Array(HMAC<Insecure.SHA1>.authenticationCode(for: counter, using: key))
            case .sha256: Array(HMAC<SHA256>.authenticationCode(for: counter, using: key))
            case .sha512: Array(HMAC<SHA512>.authenticationCode(for: counter, using: key))
            }
        // RFC 4226, 5.3: dynamic truncation.
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        let modulus: UInt32 = digits == 8 ? 100_000_000 : 1_000_000
        let number = String(binary % modulus)
        return String(repeating: "0", count: digits - number.count) + number
    }

    /// The time step whose code `code` is, among the steps from `window` before the step of `date`
    /// to `window` after it (a clock that runs a little early or late); nil when none matches.
    /// Every candidate is compared in full, in time independent of where the codes differ.
    ///
    /// - Parameters:
    ///   - code: The code as entered (spaces are ignored).
    ///   - date: Now.
    ///   - window: How many steps either side are accepted (1 by default, RFC 6238's recommendation).
    /// - Returns: The matching step, or nil.
    public func step(matching code: String, at date: Date, window: Int = 1) -> UInt64? {
        let entered = Array(code.utf8.filter { $0 != UInt8(ascii: " ") })
        guard entered.count == digits, entered.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let now = step(at: date)
        var found: UInt64?
        let first = now >= UInt64(window) ? now - UInt64(window) : 0
        for candidate in first...(now + UInt64(window)) {
            let expected = Array(self.code(step: candidate).utf8)
            var difference: UInt8 = 0
            for (left, right) in zip(expected, entered) { difference |= left ^ right }
            if difference == 0, found == nil { found = candidate }
        }
        return found
    }

    /// The `otpauth://` URI an authenticator app reads (as a QR code), in the Key Uri Format
    /// authenticator apps share: the label `issuer:account`, the secret in base32 without padding,
    /// and the issuer, algorithm, digits and period.
    ///
    /// - Parameters:
    ///   - issuer: Who the code is for (the app's or service's name).
    ///   - account: The account's name as the app shows it (a user id).
    /// - Returns: The URI.
    public func uri(issuer: String, account: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~@")
        func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        let label = "\(escaped(issuer)):\(escaped(account))"
        return "otpauth://totp/\(label)?secret=\(Self.base32(secret))&issuer=\(escaped(issuer))"
            + "&algorithm=\(algorithm.rawValue)&digits=\(digits)&period=\(period)"
    }

    /// `bytes` in base32 (RFC 4648, upper case), without padding.
    ///
    /// - Parameter bytes: Any bytes.
    /// - Returns: The text.
    public static func base32(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 0x1f)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1f)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of base32 text (RFC 4648; upper or lower case, padding and spaces ignored), or
    /// nil for a character outside the alphabet.
    ///
    /// - Parameter text: Base32 text, as ``base32(_:)`` writes it.
    /// - Returns: The bytes (a last incomplete byte is dropped).
    public static func bytes(base32 text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.utf8 where character != UInt8(ascii: "=") && character != UInt8(ascii: " ") {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a")
            case UInt8(ascii: "2")...UInt8(ascii: "7"): value = character - UInt8(ascii: "2") + 26
            default: return nil
            }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xff))
                bits -= 8
            }
        }
        return output
    }
}
