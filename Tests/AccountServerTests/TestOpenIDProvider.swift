//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import Hummingbird
import JWTKit
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing
import _CryptoExtras

/// A throwaway OpenID provider on 127.0.0.1: its own ES256 and RS256 keys (made with swift-crypto),
/// a JWKS route that counts its fetches and answers with `Cache-Control: max-age`, key rotation,
/// and tokens signed with jwt-kit.
final class TestOpenIDProvider: Sendable {
    /// The claims of a minted token; nil leaves a claim out.
    struct Claims: JWTPayload {
        var iss: String?
        var sub: String?
        var aud: [String]?
        var exp: Int?
        var iat: Int?
        var nonce: String?
        var email: String?
        var emailVerified: String?

        private enum CodingKeys: String, CodingKey {
            case iss, sub, aud, exp, iat, nonce, email
            case emailVerified = "email_verified"
        }

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    let issuer = "https://id.provider.test"
    let clientId = "edu.stanford.spezi.app"
    let port: Int
    /// The keys that sign, by key id (published or not).
    let signers = JWTKeyCollection()
    /// The JWK objects the JWKS route publishes.
    private let published = Mutex<[[String: String]]>([])
    private let fetches = Atomic<Int>(0)
    /// The `max-age` the JWKS route sends.
    let maxAge = Mutex(3_600)

    /// The key the server's client secrets must be signed with (Apple's team key), and its id.
    let clientSecretKey = P256.Signing.PrivateKey()
    let clientSecretKeyId = "TEAMKEY01"
    let teamId = "TEAM000001"
    /// How many revocation calls still fail with 503 before the endpoint works.
    let revokeFailuresLeft = Mutex(0)
    /// The tokens revoked, in order, and every call made to the revocation endpoint.
    let revoked = Mutex<[String]>([])
    let revokeCalls = Atomic<Int>(0)

    /// The claims of a client secret.
    struct ClientSecret: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var exp: Int

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Whether a form's `client_secret` is a JWT of the team's key for this provider and client.
    func acceptsClientSecret(_ form: [String: String]) async -> Bool {
        guard let secret = form["client_secret"], form["client_id"] == clientId else { return false }
        let keys = JWTKeyCollection()
        guard let key = try? ES256PublicKey(backing: clientSecretKey.publicKey) else { return false }
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: clientSecretKeyId))
        guard let claims = try? await keys.verify(secret, as: ClientSecret.self) else { return false }
        return claims.iss == teamId && claims.sub == clientId && claims.aud == issuer && claims.exp > Int(Date().timeIntervalSince1970)
    }

    static func form(_ request: Request) async throws -> [String: String] {
        let body = try await request.body.collect(upTo: 64 * 1024)
        let text = String(buffer: body)
        var form: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        return form
    }

    static func json(_ status: HTTPResponse.Status, _ object: [String: Any]) throws -> Response {
        let body = try JSONSerialization.data(withJSONObject: object)
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    private init(port: Int) {
        self.port = port
    }

    var jwksURL: String { "http://127.0.0.1:\(port)/jwks" }
    var tokenURL: String { "http://127.0.0.1:\(port)/token" }
    /// Answers 200 at once, then sends its 1,024 bytes one a second: a provider that trickles its
    /// answer (a client without a deadline on the body waits 17 minutes).
    var stallingURL: String { "http://127.0.0.1:\(port)/stall" }
    var revokeURL: String { "http://127.0.0.1:\(port)/revoke" }
    /// How often the JWKS route was fetched.
    var jwksFetches: Int { fetches.load(ordering: .relaxed) }

    /// A new ES256 key (swift-crypto's P-256), able to sign at once; published when `publish` says so.
    func addES256(kid: String, publish: Bool = true) async {
        let key = P256.Signing.PrivateKey()
        let raw = key.publicKey.rawRepresentation
        await signers.add(ecdsa: try! ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
        if publish {
            let jwk = [
                "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid, "x": Self.base64URL(raw.prefix(32)),
                "y": Self.base64URL(raw.suffix(32))
            ]
            published.withLock { $0.append(jwk) }
        }
    }

    /// A new RS256 key (swift-crypto's RSA, 2048 bits), able to sign at once; published when `publish` says so.
    func addRS256(kid: String, publish: Bool = true) async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let jwtKey = try Insecure.RSA.PrivateKey(backing: key)
        await signers.add(rsa: jwtKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        if publish {
            let (modulus, exponent) = try jwtKey.publicKey.getKeyPrimitives()
            let jwk = ["kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": Self.base64URL(modulus), "e": Self.base64URL(exponent)]
            published.withLock { $0.append(jwk) }
        }
    }

    /// Rotation: the JWKS publishes only the keys of these ids from now on.
    func publishOnly(_ kids: Set<String>) {
        published.withLock { keys in keys.removeAll { !kids.contains($0["kid"] ?? "") } }
    }

    /// Claims that pass every check, for `nonce` (put in the token as given).
    func goodClaims(sub: String = "001234.test.0001", nonce: String? = "n-0123456789", now: Date = Date()) -> Claims {
        let seconds = Int(now.timeIntervalSince1970)
        return Claims(iss: issuer, sub: sub, aud: [clientId], exp: seconds + 600, iat: seconds - 5, nonce: nonce)
    }

    /// A token of `claims` signed with the key `kid`.
    func mint(_ claims: Claims, kid: String) async throws -> String {
        try await signers.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// A token whose header says `alg: none`, with no signature.
    func unsigned(_ claims: Claims, kid: String) throws -> String {
        let header = Self.base64URL(Data(#"{"alg":"none","kid":"\#(kid)","typ":"JWT"}"#.utf8))
        return header + "." + Self.base64URL(try JSONEncoder().encode(claims)) + "."
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Runs `body` with a provider listening on 127.0.0.1 (a port the system picked); stops it after.
    static func with(_ body: @Sendable (TestOpenIDProvider) async throws -> Void) async throws {
        let holder = Mutex<TestOpenIDProvider?>(nil)
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            provider.fetches.add(1, ordering: .relaxed)
            let keys = provider.published.withLock { $0 }
            let body = try JSONSerialization.data(withJSONObject: ["keys": keys], options: [.sortedKeys])
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "public, max-age=\(provider.maxAge.withLock { $0 })"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }
        // The token endpoint: a code `c-…` grants the refresh token `r-…`, to a client with a good secret.
        router.post("/token") { request, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let form = try await Self.form(request)
            guard await provider.acceptsClientSecret(form) else { return try Self.json(.unauthorized, ["error": "invalid_client"]) }
            guard form["grant_type"] == "authorization_code", let code = form["code"], code.hasPrefix("c-") else {
                return try Self.json(.badRequest, ["error": "invalid_grant"])
            }
            return try Self.json(
                .ok, ["access_token": "a-x", "token_type": "Bearer", "expires_in": 3_600, "refresh_token": "r-" + code.dropFirst(2)])
        }
        // A byte a second: a client that gives up ends this at the next write.
        let stall: @Sendable (Request, BasicRequestContext) async throws -> Response = { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(contentLength: 1_024) { writer in
                    for _ in 0..<1_024 {
                        try await writer.write(ByteBuffer(string: " "))
                        try await Task.sleep(for: .seconds(1))
                    }
                })
        }
        router.get("/stall", use: stall)
        router.post("/stall", use: stall)
        // The revocation endpoint: down (503) for the first `revokeFailuresLeft` calls.
        router.post("/revoke") { request, _ -> Response in
            guard let provider = holder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            provider.revokeCalls.add(1, ordering: .relaxed)
            let down = provider.revokeFailuresLeft.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0
            }
            if down { return Response(status: .serviceUnavailable) }
            let form = try await Self.form(request)
            guard await provider.acceptsClientSecret(form) else { return try Self.json(.unauthorized, ["error": "invalid_client"]) }
            guard let token = form["token"] else { return try Self.json(.badRequest, ["error": "invalid_request"]) }
            provider.revoked.withLock { $0.append(token) }
            return Response(status: .ok)
        }
        try await withLoopbackApplication(router, label: "test-openid-provider", logLevel: .warning) { port in
            let provider = TestOpenIDProvider(port: port)
            holder.withLock { $0 = provider }
            try await body(provider)
        }
    }
}
