//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore

/// How the server proves itself to a provider's token and revocation endpoints.
public enum ProviderClientSecret: Sendable, Equatable {
    /// A fixed client secret (Google's, an organization's own provider).
    case fixed(String)
    /// Sign in with Apple's: a short-lived ES256 JWT made for each call, signed with the team's
    /// private key (`iss` the team id, `sub` the client id, `aud` the provider's issuer, `kid` the key id).
    case signedJWT(teamId: String, keyId: String, privateKeyPEM: String)
}

/// A provider's token endpoints: where an authorization code is exchanged for a refresh token, and
/// where a token is revoked (Apple requires the revocation when an account is deleted).
public struct ProviderTokenEndpoints: Sendable, Equatable {
    /// The token endpoint (Apple: `https://appleid.apple.com/auth/token`).
    public var tokenURL: String
    /// The revocation endpoint (Apple: `https://appleid.apple.com/auth/revoke`).
    public var revokeURL: String
    /// The client id the codes were issued to (the app's bundle id for an app's codes).
    public var clientId: String
    /// The client secret.
    public var clientSecret: ProviderClientSecret

    /// Endpoints.
    ///
    /// - Parameters:
    ///   - tokenURL: The token endpoint.
    ///   - revokeURL: The revocation endpoint.
    ///   - clientId: The client id.
    ///   - clientSecret: The client secret.
    public init(tokenURL: String, revokeURL: String, clientId: String, clientSecret: ProviderClientSecret) {
        self.tokenURL = tokenURL
        self.revokeURL = revokeURL
        self.clientId = clientId
        self.clientSecret = clientSecret
    }

    /// Apple's endpoints, with the team's key.
    ///
    /// - Parameters:
    ///   - clientId: The app's bundle id.
    ///   - teamId: The developer team's id.
    ///   - keyId: The id of the team's Sign in with Apple key.
    ///   - privateKeyPEM: That key (the `.p8` file's contents).
    /// - Returns: The endpoints.
    public static func apple(clientId: String, teamId: String, keyId: String, privateKeyPEM: String) -> Self {
        Self(
            tokenURL: "https://appleid.apple.com/auth/token", revokeURL: "https://appleid.apple.com/auth/revoke", clientId: clientId,
            clientSecret: .signedJWT(teamId: teamId, keyId: keyId, privateKeyPEM: privateKeyPEM))
    }
}

/// Why a call to a provider's token endpoints failed.
public enum ProviderTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The endpoint answered with this status (and OAuth error code, when it sent one).
    case status(Int, error: String?)
    /// No answer within the timeout.
    case timedOut
    /// An answer that is not what the endpoint should send.
    case malformed(String)
    /// The client secret cannot be made (the private key does not load).
    case invalidKey(String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .status(status, error): "the provider answered \(status)" + (error.map { " (\($0))" } ?? "")
        case .timedOut: "the provider did not answer in time"
        case let .malformed(reason): "the provider's answer is malformed: \(reason)"
        case let .invalidKey(reason): "the client secret cannot be made: \(reason)"
        }
    }
}

/// Calls a provider's token and revocation endpoints (RFC 6749 §4.1.3, RFC 7009) with a timeout
/// and a cap on the answer's size.
public struct ProviderTokenClient: Sendable {
    /// The endpoints.
    public let endpoints: ProviderTokenEndpoints
    /// The provider's issuer: the audience of a signed client secret.
    public let issuer: String
    private let client: HTTPClient
    private let timeout: Duration
    private let maxResponseBytes: Int

    /// A client.
    ///
    /// - Parameters:
    ///   - endpoints: The endpoints and credentials.
    ///   - issuer: The provider's issuer.
    ///   - client: The HTTP client; the shared one by default.
    ///   - timeout: How long one call may take.
    ///   - maxResponseBytes: The largest answer read.
    public init(
        endpoints: ProviderTokenEndpoints, issuer: String, client: HTTPClient = .shared, timeout: Duration = .seconds(10),
        maxResponseBytes: Int = 64 * 1024
    ) {
        self.endpoints = endpoints
        self.issuer = issuer
        self.client = client
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    /// Exchanges an authorization code for the refresh token it grants.
    ///
    /// - Parameter code: The authorization code the app received with its identity token.
    /// - Returns: The refresh token, or nil when the answer carries none.
    /// - Throws: ``ProviderTokenError``.
    public func exchange(authorizationCode code: String) async throws -> String? {
        let (status, body) = try await post(
            endpoints.tokenURL,
            form: [
                ("client_id", endpoints.clientId), ("client_secret", try await clientSecret()), ("code", code),
                ("grant_type", "authorization_code")
            ])
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        guard status == 200 else { throw ProviderTokenError.status(status, error: object?["error"] as? String) }
        guard let object else { throw ProviderTokenError.malformed("not a JSON object") }
        return object["refresh_token"] as? String
    }

    /// Revokes a refresh token. A token the provider calls invalid (`invalid_grant`) counts as revoked.
    ///
    /// - Parameter token: The refresh token.
    /// - Throws: ``ProviderTokenError`` when the provider did not confirm: try again later.
    public func revoke(refreshToken token: String) async throws {
        let (status, body) = try await post(
            endpoints.revokeURL,
            form: [
                ("client_id", endpoints.clientId), ("client_secret", try await clientSecret()), ("token", token),
                ("token_type_hint", "refresh_token")
            ])
        if (200..<300).contains(status) { return }
        let error = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["error"] as? String
        if status == 400, error == "invalid_grant" { return }
        throw ProviderTokenError.status(status, error: error)
    }

    /// The client secret for one call.
    func clientSecret() async throws -> String {
        switch endpoints.clientSecret {
        case let .fixed(secret):
            return secret
        case let .signedJWT(teamId, keyId, pem):
            let keys = JWTKeyCollection()
            do {
                await keys.add(ecdsa: try ES256PrivateKey(pem: pem), kid: JWKIdentifier(string: keyId))
            } catch {
                throw ProviderTokenError.invalidKey("\(error)")
            }
            let now = Int(Date().timeIntervalSince1970)
            let claims = ClientSecretClaims(iss: teamId, sub: endpoints.clientId, aud: issuer, iat: now, exp: now + 300)
            return try await keys.sign(claims, kid: JWKIdentifier(string: keyId))
        }
    }

    private func post(_ url: String, form: [(String, String)]) async throws -> (Int, Data) {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = form.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let client = client
        let timeout = timeout
        let maxBytes = maxResponseBytes
        let prepared = request
        return try await withDeadline(timeout, timedOut: ProviderTokenError.timedOut) {
            let response = try await client.execute(prepared, timeout: TimeAmount(timeout))
            let buffer: ByteBuffer
            do {
                buffer = try await response.body.collect(upTo: maxBytes)
            } catch is NIOTooManyBytesError {
                throw ProviderTokenError.malformed("larger than \(maxBytes) bytes")
            }
            return (Int(response.status.code), Data(buffer.readableBytesView))
        }
    }
}

/// The claims of Apple's client secret.
private struct ClientSecretClaims: JWTPayload {
    let iss: String
    let sub: String
    let aud: String
    let iat: Int
    let exp: Int

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
