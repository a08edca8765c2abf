//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import SpeziAccountStore

/// OWASP's device cookies: after a successful sign-in (or the signup that created the account) the
/// server hands the client a cookie that proves it, bound to the user id. A later login for that
/// user id presenting the cookie is a *known device*: the store counts its password checks apart
/// from the crowd's (``AccountStore/Context/device``), so guesses from any number of addresses can
/// delay or refuse strangers but never the owner's own browser or app.
///
/// - The cookie's name is `spezi_device_` and 16 hex digits of an HMAC of the normalized user id
///   (one cookie per user id on a device, and the name says nothing of the id); its value is
///   `v1.<nonce>.<mac>`: 16 random bytes and the HMAC-SHA256 of the user id and the nonce, both
///   base64url, under a key every server of the store derives alike (``AccountStore``'s vault or
///   log secret), so the cookie works on every node.
/// - `HttpOnly; SameSite=Strict`, a year long, its `Path` the sign-in route's own path (so it is
///   sent to nothing else), `Secure` with ``AccountServerConfiguration/secureCookies``.
/// - A cookie for another user id, a forged or altered one, or none: the client is a stranger.
struct DeviceCookies: Sendable {
    static let namePrefix = "spezi_device_"
    static let lifetime: Int64 = 365 * 86_400

    let secure: Bool
    private let key: DerivedKey

    init(store: AccountStore, secure: Bool) {
        self.secure = secure
        self.key = DerivedKey { try await store.derivedKey(purpose: "device-cookie v1") }
    }

    /// The device id (the nonce) when the request carries a valid cookie for `userId`; nil otherwise.
    func device(in request: Request, userId: String) async throws -> String? {
        let key = try await key.get()
        let user = AccountLog.normalizedUserId(userId)
        guard let value = request.cookies[Self.name(for: user, key: key)]?.value else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", parts[1].utf8.count == 22, parts[2].utf8.count == 43 else { return nil }
        let nonce = String(parts[1])
        let expected = Self.mac(key: key, user: user, nonce: nonce)
        guard PasswordHasher.constantTimeEquals(Array(expected.utf8), Array(parts[2].utf8)) else { return nil }
        return nonce
    }

    /// The `Set-Cookie` value that makes (or renews) the device cookie for `userId`; `device` keeps
    /// the nonce of the cookie the client presented.
    ///
    /// - Parameters:
    ///   - userId: The user id just signed in to (or signed up with).
    ///   - device: The device id the request proved, or nil for a new one.
    ///   - path: The path the cookie is sent to: the sign-in route's.
    func setCookie(for userId: String, device: String?, path: String) async throws -> String {
        let key = try await key.get()
        let user = AccountLog.normalizedUserId(userId)
        let nonce = device ?? base64urlString(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
        let value = "v1.\(nonce).\(Self.mac(key: key, user: user, nonce: nonce))"
        return
            "\(Self.name(for: user, key: key))=\(value); Path=\(path); HttpOnly; SameSite=Strict; Max-Age=\(Self.lifetime)\(secure ? "; Secure" : "")"
    }

    private static func name(for user: String, key: SymmetricKey) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("name\u{0}\(user)".utf8), using: key)
        return namePrefix + mac.prefix(8).hexString
    }

    private static func mac(key: SymmetricKey, user: String, nonce: String) -> String {
        base64urlString(Data(HMAC<SHA256>.authenticationCode(for: Data("device\u{0}\(user)\u{0}\(nonce)".utf8), using: key)))
    }
}
