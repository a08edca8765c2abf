//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import Foundation

/// A signup waiting for its confirmation, carried whole inside the token sent to the user id's
/// owner: nothing is stored until the token comes back.
///
/// The token is ChaCha20-Poly1305 over `[u8 version 1][u8 kind][i64 expiry µs][u16 length +
/// account id][event payload]` (big-endian), under a key that HKDF-SHA256 derives from the key
/// vault's claim secret, so every server sharing the vault can open it and nobody else can read or
/// forge it. The payload is the `account.created` or `account.anonymous-upgraded` event the
/// confirmation will append, its password already hashed.
struct SignupToken: Equatable {
    enum Kind: UInt8 {
        /// A new account, created under `accountId` (a stream that must not exist yet).
        case signup = 1
        /// The anonymous account `accountId` gets a user id and password.
        case upgrade = 2
    }

    let kind: Kind
    let accountId: String
    let expiresAtMicros: Int64
    let event: AccountEvent

    private static let version: UInt8 = 1
    private static let context = Data("spezi-account-store signup confirmation".utf8)

    /// The sealing key for the vault whose claim secret is `secret`.
    static func key(claimSecret secret: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: secret, info: Data("signup-confirmation-key v1".utf8), outputByteCount: 32)
    }

    /// The token as base64url without padding.
    func sealed(with key: SymmetricKey) throws -> String {
        var plain: [UInt8] = [Self.version, kind.rawValue]
        withUnsafeBytes(of: expiresAtMicros.bigEndian) { plain.append(contentsOf: $0) }
        let id = Array(accountId.utf8)
        withUnsafeBytes(of: UInt16(id.count).bigEndian) { plain.append(contentsOf: $0) }
        plain += id
        plain += event.encodedPayload()
        let box = try ChaChaPoly.seal(plain, using: key, authenticating: Self.context)
        return base64urlString(box.combined)
    }

    /// Opens a token, or nil when it is not one this key sealed (or it is malformed).
    static func open(_ token: String, with key: SymmetricKey) -> SignupToken? {
        guard token.utf8.count <= 16 * 1024, let combined = Self.data(base64url: token),
            let box = try? ChaChaPoly.SealedBox(combined: combined),
            let plain = try? ChaChaPoly.open(box, using: key, authenticating: Self.context)
        else { return nil }
        let bytes = [UInt8](plain)
        guard bytes.count >= 12, bytes[0] == Self.version, let kind = Kind(rawValue: bytes[1]) else { return nil }
        let expires = bytes[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let idLength = Int(bytes[10]) << 8 | Int(bytes[11])
        guard bytes.count >= 12 + idLength else { return nil }
        let accountId = String(decoding: bytes[12..<(12 + idLength)], as: UTF8.self)
        let payload = Array(bytes[(12 + idLength)...])
        let type = kind == .signup ? "account.created" : "account.anonymous-upgraded"
        guard let event = try? AccountEvent.decode(type: type, payload: payload) else { return nil }
        return SignupToken(kind: kind, accountId: accountId, expiresAtMicros: Int64(bitPattern: expires), event: event)
    }

    private static func data(base64url text: String) -> Data? {
        guard !text.contains(where: { "+/=".contains($0) }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
