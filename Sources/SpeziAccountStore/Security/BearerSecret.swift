//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import Foundation

/// The secrets the store hands out once and keeps only as their SHA-256: a session's bearer token
/// (`<account id>.<secret>`) and a password reset's token. Signup confirmations carry their whole
/// signup instead (``SignupToken``).
enum BearerSecret {
    /// 32 random bytes as base64url without padding (43 characters).
    static func make() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The lower-case hex SHA-256 of a secret, as the log records it.
    static func hash(_ secret: String) -> String {
        hash(bytes: secret.utf8)
    }

    /// The lower-case hex SHA-256 of a secret's bytes (a whole token, or a session token's secret),
    /// hashed in place when they are contiguous, as a native string's are.
    static func hash(bytes: some Collection<UInt8>) -> String {
        (bytes.withContiguousStorageIfAvailable { SHA256.hash(data: UnsafeRawBufferPointer($0)) } ?? SHA256.hash(data: Array(bytes))).hexString
    }

    /// The account id and the secret's hash of a session token, or nil for a string that is no
    /// session token: at most 512 bytes, the account id before the last `.`, a 43-character secret.
    static func parseSessionToken(_ token: String) -> (accountId: String, sessionHash: String)? {
        // Bytes, not characters: a token is ASCII when it is valid, and walking it as grapheme
        // clusters cost more than the rest of the check (a "." followed by a combining mark, which
        // no issued token has, now splits there and is refused like any unknown secret).
        let utf8 = token.utf8
        guard utf8.count <= 512, let dot = utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        let secret = utf8[utf8.index(after: dot)...]
        // `$` starts the store's own streams (the admin's audit stream): no session token names one.
        guard dot != utf8.startIndex, utf8.first != UInt8(ascii: "$"), secret.count == 43 else { return nil }
        return (String(token[..<dot]), hash(bytes: secret))
    }
}
