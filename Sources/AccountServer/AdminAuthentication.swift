//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import Hummingbird

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

/// Admin sessions: after the credential was presented (HTTP Basic), a cookie holding the name and
/// the expiry, signed with HMAC-SHA256 under a key this server process made at start. A session
/// ends when it expires or the server restarts; the browser then presents the credential again.
struct AdminSessions: Sendable {
    static let cookieName = "spezi_admin"
    let credential: AdminCredential
    let validity: Duration
    private let key = SymmetricKey(size: .bits256)

    init(credential: AdminCredential, validity: Duration) {
        self.credential = credential
        self.validity = validity
    }

    /// The administrator's name when the request carries a valid session cookie.
    func session(of request: Request, now: Date) -> String? {
        request.cookies[Self.cookieName].flatMap { check($0.value, now: now) }
    }

    /// The administrator's name and a new session cookie when the request carries the credential
    /// (HTTP Basic); nil otherwise.
    func signIn(_ request: Request, now: Date) -> (admin: String, cookie: String)? {
        guard let header = request.headers[.authorization], header.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(header.dropFirst("Basic ".count))).map({ String(decoding: $0, as: UTF8.self) }),
            let colon = decoded.firstIndex(of: ":"),
            credential.matches(name: String(decoded[..<colon]), password: String(decoded[decoded.index(after: colon)...]))
        else { return nil }
        let expires = now.addingTimeInterval(Double(validity.components.seconds))
        let cookie =
            "\(Self.cookieName)=\(sign(name: credential.name, expires: expires)); Path=/admin; HttpOnly; SameSite=Strict; Max-Age=\(validity.components.seconds)"
        return (credential.name, cookie)
    }

    /// `<expiry seconds>.<hex HMAC of "name|expiry">`; the name is the credential's.
    private func sign(name: String, expires: Date) -> String {
        let seconds = Int64(expires.timeIntervalSince1970)
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(name)|\(seconds)".utf8), using: key)
        return "\(seconds).\(mac.map { String(format: "%02x", $0) }.joined())"
    }

    private func check(_ cookie: String, now: Date) -> String? {
        let parts = cookie.split(separator: ".")
        guard parts.count == 2, let seconds = Int64(parts[0]), Double(seconds) > now.timeIntervalSince1970 else { return nil }
        let expected = sign(name: credential.name, expires: Date(timeIntervalSince1970: Double(seconds)))
        guard expected.utf8.count == cookie.utf8.count,
            zip(expected.utf8, cookie.utf8).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0
        else { return nil }
        return credential.name
    }
}
