//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import Foundation
import Hummingbird
import SpeziAccountStore
import Synchronization

/// The administrator who may use the audit console at `/admin/`: a name and a password given when
/// the server starts. There is no default; without one the console does not exist (404).
public struct AdminCredential: Sendable {
    /// The administrator's name, recorded with every action in the audit stream.
    public let name: String
    let passwordDigest: SHA256.Digest

    /// The shortest password accepted.
    public static let minimumPasswordLength = 12

    /// A credential, or an error saying what is wrong with it (an empty name, a name with a colon
    /// or a control character, a password shorter than ``minimumPasswordLength``).
    ///
    /// - Parameters:
    ///   - name: The administrator's name: 1 to 64 characters, without a colon or a control character.
    ///   - password: The password; only its SHA-256 digest is kept.
    /// - Throws: ``AdminCredentialError`` saying which rule the name or the password breaks.
    public init(name: String, password: String) throws {
        guard !name.isEmpty, name.count <= 64, !name.contains(":"),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw AdminCredentialError("the admin name must be 1 to 64 characters, without ':' or control characters") }
        guard password.count >= Self.minimumPasswordLength else {
            throw AdminCredentialError("the admin password must have at least \(Self.minimumPasswordLength) characters")
        }
        self.name = name
        self.passwordDigest = SHA256.hash(data: Data(password.utf8))
    }

    /// Reads `name:password` from the first line of a file.
    ///
    /// - Parameter path: The file whose first line reads `name:password`; a colon in the password is
    ///   kept, the first one separates.
    /// - Throws: ``AdminCredentialError`` when the file cannot be read, its first line has no colon, or
    ///   the name or the password breaks a rule of ``init(name:password:)``.
    public init(contentsOf path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw AdminCredentialError("cannot read \(path)") }
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard let colon = line.firstIndex(of: ":") else { throw AdminCredentialError("\(path) must hold one line name:password") }
        try self.init(name: String(line[..<colon]), password: String(line[line.index(after: colon)...]))
    }

    /// Whether `name` and `password` are this credential's, compared in constant time.
    func matches(name: String, password: String) -> Bool {
        let presented = SHA256.hash(data: Data(password.utf8))
        let samePassword = zip(presented, passwordDigest).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        return samePassword && name == self.name
    }
}

/// Why an ``AdminCredential`` was refused.
public struct AdminCredentialError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Admin sessions: after the sign-in form (`POST /admin/api/session`) took the name and the password,
/// a cookie holding the expiry and a random session id, signed with HMAC-SHA256 under a key this
/// server process made at start. The cookie is `HttpOnly; SameSite=Strict; Path=/admin` (and
/// `Secure` with ``AccountServerConfiguration/secureCookies``). A session ends when it expires, when
/// it is signed out (`DELETE /admin/api/session`: its id goes into an in-memory revocation list
/// until the moment it would have expired) or when the server restarts (a new key). HTTP Basic is
/// for scripts: it authenticates the one request that carries it and never opens a session.
///
/// A browser that signed in also gets a *device cookie* (`spezi_admin_device`, a year long,
/// `Path=/admin`, signed under a key every server of the store derives alike): its later
/// credential checks are not counted in the server-wide allowance that guesses from every address
/// share (``RateLimits/adminAttemptsOverall``), so a crowd of guessers cannot keep the
/// administrator out.
struct AdminSessions: Sendable {
    static let cookieName = "spezi_admin"
    static let deviceCookieName = "spezi_admin_device"
    let credential: AdminCredential
    let validity: Duration
    let secureCookies: Bool
    private let key = SymmetricKey(size: .bits256)
    private let revoked = RevokedSessions()
    /// The device cookies' key (the store's, so that every node and restart accepts them).
    private let deviceKey: DerivedKey?

    init(
        credential: AdminCredential, validity: Duration, secureCookies: Bool = false,
        deviceKey: (@Sendable () async throws -> SymmetricKey)? = nil
    ) {
        self.credential = credential
        self.validity = validity
        self.secureCookies = secureCookies
        self.deviceKey = deviceKey.map(DerivedKey.init)
    }

    /// Whether the request carries a valid admin device cookie.
    func presentsKnownDevice(_ request: Request) async throws -> Bool {
        guard let value = request.cookies[Self.deviceCookieName]?.value, let key = try await currentDeviceKey() else { return false }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", parts[1].utf8.count == 22 else { return false }
        let expected = Self.deviceMAC(key: key, name: credential.name, nonce: String(parts[1]))
        return PasswordHasher.constantTimeEquals(Array(expected.utf8), Array(parts[2].utf8))
    }

    /// The `Set-Cookie` value of a new admin device cookie; nil without a key source.
    func deviceCookie() async throws -> String? {
        guard let key = try await currentDeviceKey() else { return nil }
        let nonce = base64urlString(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
        let value = "v1.\(nonce).\(Self.deviceMAC(key: key, name: credential.name, nonce: nonce))"
        return
            "\(Self.deviceCookieName)=\(value); Path=/admin; HttpOnly; SameSite=Strict; Max-Age=\(DeviceCookies.lifetime)\(secureCookies ? "; Secure" : "")"
    }

    private func currentDeviceKey() async throws -> SymmetricKey? {
        try await deviceKey?.get()
    }

    private static func deviceMAC(key: SymmetricKey, name: String, nonce: String) -> String {
        base64urlString(Data(HMAC<SHA256>.authenticationCode(for: Data("admin-device\u{0}\(name)\u{0}\(nonce)".utf8), using: key)))
    }

    /// Whether a session cookie the request carried is still good: for an open stream, which
    /// ends once its session is signed out or expires.
    func isStillValid(_ request: Request, now: Date) -> Bool {
        session(of: request, now: now) != nil
    }

    /// The administrator's name when the request carries a valid session cookie that was not
    /// signed out.
    func session(of request: Request, now: Date) -> String? {
        guard let cookie = request.cookies[Self.cookieName], let session = check(cookie.value, now: now),
            !revoked.contains(session.id)
        else { return nil }
        return credential.name
    }

    /// Whether the request carries HTTP Basic credentials (right or wrong).
    static func presentsBasic(_ request: Request) -> Bool {
        request.headers[.authorization].map { $0.lowercased().hasPrefix("basic ") } ?? false
    }

    /// The administrator's name when the request carries the credential as HTTP Basic; nil
    /// otherwise. No session is opened.
    func basic(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], Self.presentsBasic(request),
            let decoded = Data(base64Encoded: String(header.dropFirst("Basic ".count))).map({ String(decoding: $0, as: UTF8.self) }),
            let colon = decoded.firstIndex(of: ":"),
            credential.matches(name: String(decoded[..<colon]), password: String(decoded[decoded.index(after: colon)...]))
        else { return nil }
        return credential.name
    }

    /// A new session's cookie (a `Set-Cookie` value) when `name` and `password` are the
    /// credential's; nil otherwise.
    func signIn(name: String, password: String, now: Date) -> String? {
        guard credential.matches(name: name, password: password) else { return nil }
        let expires = Int64(now.timeIntervalSince1970) + validity.components.seconds
        var generator = SystemRandomNumberGenerator()
        let sessionId = (0..<2).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
        return cookie(value: "\(expires).\(sessionId).\(mac(expires: expires, id: sessionId))", maxAge: validity.components.seconds)
    }

    /// Ends the session the request's cookie names (if any, and valid); the answer is the
    /// `Set-Cookie` value that clears the cookie in the browser.
    func signOut(_ request: Request, now: Date) -> String {
        if let cookie = request.cookies[Self.cookieName], let session = check(cookie.value, now: now) {
            revoked.revoke(session.id, until: session.expires, now: now)
        }
        return cookie(value: "", maxAge: 0)
    }

    private func cookie(value: String, maxAge: Int64) -> String {
        "\(Self.cookieName)=\(value); Path=/admin; HttpOnly; SameSite=Strict; Max-Age=\(maxAge)\(secureCookies ? "; Secure" : "")"
    }

    /// The hex HMAC of `name|expiry|id`; the name is the credential's.
    private func mac(expires: Int64, id: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(credential.name)|\(expires)|\(id)".utf8), using: key)
        return mac.hexString
    }

    /// `<expiry seconds>.<session id>.<mac>`: the session's id and expiry when the MAC is right
    /// and the expiry has not passed.
    private func check(_ cookie: String, now: Date) -> (id: String, expires: Int64)? {
        let parts = cookie.split(separator: ".")
        guard parts.count == 3, parts[1].utf8.count == 32, let expires = Int64(parts[0]), Double(expires) > now.timeIntervalSince1970 else {
            return nil
        }
        let expected = mac(expires: expires, id: String(parts[1]))
        guard expected.utf8.count == parts[2].utf8.count,
            zip(expected.utf8, parts[2].utf8).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0
        else { return nil }
        return (String(parts[1]), expires)
    }
}

/// The ids of signed-out sessions, each kept until its session would have expired (then its
/// cookie is refused anyway). Only the credential opens sessions, so the list stays small.
private final class RevokedSessions: Sendable {
    private let ids = Mutex<[String: Int64]>([:])

    func revoke(_ id: String, until expires: Int64, now: Date) {
        let seconds = Int64(now.timeIntervalSince1970)
        ids.withLock { ids in
            ids = ids.filter { $0.value > seconds }
            ids[id] = expires
        }
    }

    func contains(_ id: String) -> Bool {
        ids.withLock { $0[id] != nil }
    }
}
