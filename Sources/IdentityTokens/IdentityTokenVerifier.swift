//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Crypto
import Foundation
import JWTKit
import Logging
import NIOCore
import Synchronization

/// Why an identity token was refused. Every case but ``keysUnavailable`` is the token's fault.
public enum IdentityTokenError: Error, Sendable, Equatable {
    /// No provider of that id is configured.
    case unknownProvider(String)
    /// The token is longer than ``IdentityTokenLimits/maxTokenBytes``.
    case tooLarge
    /// The token is not a compact JWS of three base64url parts with a JSON header and payload.
    case malformed(String)
    /// The header names an algorithm the provider is not configured for (`none` among them).
    case unsupportedAlgorithm(String)
    /// The header names no key, or one the provider's key set does not hold (after a refetch when
    /// one was allowed).
    case unknownKey(String)
    /// The signature does not verify with the key the header names.
    case badSignature
    /// `iss` is not the provider's issuer.
    case wrongIssuer
    /// `aud` names none of the provider's client ids.
    case wrongAudience
    /// `exp` has passed (beyond the allowed skew).
    case expired
    /// `iat` is in the future (beyond the allowed skew), or `nbf` has not come yet.
    case notYetValid
    /// The request or the token lacks the nonce the provider requires.
    case nonceMissing
    /// The token's nonce is not the request's (or its SHA-256, for Apple).
    case nonceMismatch
    /// A required claim (`sub`, `exp`, `iat`) is missing or empty.
    case missingClaim(String)
    /// The provider's key set could not be fetched and no copy of it is at hand.
    case keysUnavailable(String)
}

/// What a verified identity token says about its holder.
public struct VerifiedIdentity: Sendable, Equatable {
    /// The configured provider's id (`apple`).
    public let provider: String
    /// The token's issuer (`iss`), the provider's.
    public let issuer: String
    /// The holder's stable id at the provider (`sub`).
    public let subject: String
    /// The e-mail address in the token, if any.
    public let email: String?
    /// Whether the provider says it verified ``email`` (`email_verified`).
    public let emailVerified: Bool
}

/// Verifies identity tokens of the configured OpenID Connect providers: the signature with jwt-kit
/// against the provider's published key set (JWKS), then `iss`, `aud`, `exp`, `iat`, `nbf` and the
/// nonce.
///
/// Key sets are fetched with AsyncHTTPClient, each fetch bounded by
/// ``IdentityTokenLimits/fetchTimeout`` and ``IdentityTokenLimits/maxKeySetBytes``, and kept as
/// long as the answer's `Cache-Control: max-age` says (within
/// ``IdentityTokenLimits/minimumCacheAge`` and ``IdentityTokenLimits/maximumCacheAge``). A token
/// whose `kid` the set does not hold causes one refetch, but never sooner than
/// ``IdentityTokenLimits/minimumRefetchInterval`` after the last fetch: a flood of made-up key ids
/// costs the provider at most one request per interval. Concurrent verifications share one fetch.
public final class IdentityTokenVerifier: Sendable {
    /// The longest issuer or subject accepted (bytes of UTF-8).
    public static let maxIdentifierBytes = 255

    /// The providers, by id.
    public let providers: [String: IdentityProviderConfiguration]
    /// The bounds on fetches, time and sizes.
    public let limits: IdentityTokenLimits
    private let client: HTTPClient
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let caches: [String: KeySetCache]

    /// A verifier for `providers`.
    ///
    /// - Parameters:
    ///   - providers: The accepted providers (their ids must differ).
    ///   - limits: The bounds on fetches, time and sizes.
    ///   - client: The HTTP client that fetches key sets; the shared one by default.
    ///   - logger: Where fetch failures and skipped keys are logged.
    ///   - now: The clock `exp`, `iat` and `nbf` are checked against.
    public init(
        providers: [IdentityProviderConfiguration], limits: IdentityTokenLimits = IdentityTokenLimits(), client: HTTPClient = .shared,
        logger: Logger = Logger(label: "spezi.identity-tokens"), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        let byId = Dictionary(providers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.providers = byId
        self.limits = limits
        self.client = client
        self.logger = logger
        self.now = now
        self.caches = byId.mapValues { _ in KeySetCache() }
    }

    /// Verifies `token` as an identity token of the provider `providerId`.
    ///
    /// - Parameters:
    ///   - token: The identity token, a compact JWS.
    ///   - providerId: The configured provider's id.
    ///   - nonce: The nonce the app sent with the token (raw; for Apple, the one whose SHA-256 it
    ///     handed to Apple).
    /// - Returns: The provider, issuer and subject, and the e-mail address the token carries.
    /// - Throws: ``IdentityTokenError``.
    public func verify(_ token: String, provider providerId: String, nonce: String?) async throws -> VerifiedIdentity {
        guard let provider = providers[providerId], let cache = caches[providerId] else { throw IdentityTokenError.unknownProvider(providerId) }
        guard token.utf8.count <= limits.maxTokenBytes else { throw IdentityTokenError.tooLarge }
        let header = try Self.header(of: token)
        guard provider.algorithms.contains(header.alg) else { throw IdentityTokenError.unsupportedAlgorithm(header.alg) }
        guard let kid = header.kid, !kid.isEmpty else { throw IdentityTokenError.unknownKey("") }
        if header.crit != nil { throw IdentityTokenError.malformed("the header has critical extensions") }

        var keys = try await keySet(of: provider, cache: cache, wanting: kid)
        if keys.kinds[kid] == nil {
            // One refetch for a key id the set does not hold (the provider may have rotated its keys).
            keys = try await keySet(of: provider, cache: cache, wanting: kid, refetchingUnknown: true)
        }
        guard let kind = keys.kinds[kid] else { throw IdentityTokenError.unknownKey(kid) }
        guard kind.accepts(header.alg) else { throw IdentityTokenError.unsupportedAlgorithm(header.alg) }

        let claims: IdentityClaims
        do {
            claims = try await keys.collection.verify(token, as: IdentityClaims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw IdentityTokenError.badSignature
        } catch {
            throw IdentityTokenError.malformed("\(error)")
        }
        try check(claims, of: provider, nonce: nonce)
        return VerifiedIdentity(
            provider: provider.id, issuer: claims.iss, subject: claims.sub ?? "", email: claims.email, emailVerified: claims.emailVerified ?? false)
    }

    private func check(_ claims: IdentityClaims, of provider: IdentityProviderConfiguration, nonce: String?) throws {
        guard claims.iss == provider.issuer else { throw IdentityTokenError.wrongIssuer }
        guard claims.aud.contains(where: provider.clientIds.contains) else { throw IdentityTokenError.wrongAudience }
        guard let sub = claims.sub, !sub.isEmpty, sub.utf8.count <= Self.maxIdentifierBytes else { throw IdentityTokenError.missingClaim("sub") }
        guard let exp = claims.exp else { throw IdentityTokenError.missingClaim("exp") }
        guard let iat = claims.iat else { throw IdentityTokenError.missingClaim("iat") }
        let now = now().timeIntervalSince1970
        let skew = Self.seconds(limits.clockSkew)
        guard exp + skew > now else { throw IdentityTokenError.expired }
        guard iat - skew <= now else { throw IdentityTokenError.notYetValid }
        if let nbf = claims.nbf, nbf - skew > now { throw IdentityTokenError.notYetValid }

        switch (nonce, claims.nonce) {
        case (nil, nil):
            if provider.requiresNonce { throw IdentityTokenError.nonceMissing }
        case (nil, _?), (_?, nil):
            throw IdentityTokenError.nonceMissing
        case let (sent?, carried?):
            let expected =
                switch provider.nonce {
                case .raw: sent
                case .sha256Hex: SHA256.hash(data: Array(sent.utf8)).map { String(format: "%02x", $0) }.joined()
                }
            guard Self.constantTimeEqual(expected, carried) else { throw IdentityTokenError.nonceMismatch }
        }
    }

    // MARK: Key sets

    /// The provider's keys: the cached set while it is fresh; otherwise (or with
    /// `refetchingUnknown`, for a key id the cached set lacks) a new fetch when the last one is at
    /// least the minimum interval ago, shared with concurrent callers.
    private func keySet(
        of provider: IdentityProviderConfiguration, cache: KeySetCache, wanting kid: String, refetchingUnknown: Bool = false
    ) async throws -> KeySet {
        let clock = ContinuousClock()
        let minimumInterval = limits.minimumRefetchInterval
        enum Step {
            case use(KeySet)
            case wait(Task<KeySet, any Error>)
            case refuse(String)
        }
        let step: Step = cache.state.withLock { state in
            let now = clock.now
            if let inFlight = state.inFlight { return .wait(inFlight) }
            if let keys = state.keys {
                let fresh = now < state.expires
                let wanted = keys.kinds[kid] != nil
                if fresh && (wanted || !refetchingUnknown) { return .use(keys) }
                // Stale, or an unknown key id: fetch again only past the minimum interval.
                if let last = state.lastFetch, now - last < minimumInterval { return .use(keys) }
            } else if let last = state.lastFetch, now - last < minimumInterval {
                return .refuse(state.lastError ?? "the key set was fetched moments ago")
            }
            state.lastFetch = now
            let task = Task { try await self.fetch(provider) }
            state.inFlight = task
            return .wait(task)
        }
        switch step {
        case let .use(keys):
            return keys
        case let .refuse(reason):
            throw IdentityTokenError.keysUnavailable(reason)
        case let .wait(task):
            do {
                let keys = try await task.value
                cache.state.withLock { state in
                    if state.inFlight == task {
                        state.inFlight = nil
                        state.keys = keys
                        state.expires = clock.now + keys.maxAge
                        state.lastError = nil
                    }
                }
                return keys
            } catch {
                let stale: KeySet? = cache.state.withLock { state in
                    if state.inFlight == task {
                        state.inFlight = nil
                        state.lastError = "\(error)"
                    }
                    return state.keys
                }
                logger.error(
                    "the key set of an identity provider could not be fetched",
                    metadata: ["provider": "\(provider.id)", "url": "\(provider.jwksURL)", "error": "\(error)"])
                // A provider that is down for a moment: its last keys stay in use.
                if let stale { return stale }
                throw IdentityTokenError.keysUnavailable("\(error)")
            }
        }
    }

    /// Fetches and parses the provider's key set, within the time and size limits.
    private func fetch(_ provider: IdentityProviderConfiguration) async throws -> KeySet {
        let timeout = limits.fetchTimeout
        let maxBytes = limits.maxKeySetBytes
        let client = client
        let (body, cacheControl) = try await withDeadline(timeout, timedOut: KeySetFetchError.timedOut(timeout)) {
            var request = HTTPClientRequest(url: provider.jwksURL)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            guard response.status == .ok else { throw KeySetFetchError.status(Int(response.status.code)) }
            if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > maxBytes {
                throw KeySetFetchError.tooLarge(maxBytes)
            }
            let body: ByteBuffer
            do {
                body = try await response.body.collect(upTo: maxBytes)
            } catch is NIOTooManyBytesError {
                throw KeySetFetchError.tooLarge(maxBytes)
            }
            return (body, response.headers[canonicalForm: "Cache-Control"].joined(separator: ","))
        }
        let document: LenientKeySet
        do {
            document = try JSONDecoder().decode(LenientKeySet.self, from: Data(body.readableBytesView))
        } catch {
            throw KeySetFetchError.notAKeySet("\(error)")
        }
        let collection = JWTKeyCollection()
        var kinds: [String: KeyKind] = [:]
        for entry in document.keys {
            guard let jwk = entry.jwk else {
                logger.warning(
                    "a key of an identity provider's set was skipped", metadata: ["provider": "\(provider.id)", "error": "\(entry.error ?? "")"])
                continue
            }
            guard let kid = jwk.keyIdentifier?.string, !kid.isEmpty, let kind = KeyKind(jwk), entry.use == nil || entry.use == "sig" else {
                logger.info(
                    "a key of an identity provider's set was skipped: no key id, or not a signing key of RSA or P-256",
                    metadata: ["provider": "\(provider.id)"])
                continue
            }
            do {
                try await collection.add(jwk: jwk)
                kinds[kid] = kind
            } catch {
                logger.warning(
                    "a key of an identity provider's set does not load",
                    metadata: ["provider": "\(provider.id)", "kid": "\(kid)", "error": "\(error)"])
            }
        }
        return KeySet(collection: collection, kinds: kinds, maxAge: cacheAge(cacheControl))
    }

    /// How long a key set is kept: `max-age` of its `Cache-Control`, within the configured bounds
    /// (the default age without one; the minimum with `no-store` or `no-cache`).
    func cacheAge(_ cacheControl: String?) -> Duration {
        var age = limits.defaultCacheAge
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            switch parts.first {
            case "max-age":
                if parts.count == 2, let seconds = Int64(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) {
                    age = .seconds(max(0, seconds))
                }
            case "no-store", "no-cache":
                age = .zero
            default:
                continue
            }
        }
        return min(max(age, limits.minimumCacheAge), limits.maximumCacheAge)
    }

    // MARK: Parsing

    struct Header: Decodable {
        let alg: String
        let kid: String?
        let crit: [String]?
    }

    /// The token's header, decoded without trusting it.
    static func header(of token: String) throws -> Header {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { throw IdentityTokenError.malformed("not three parts") }
        guard let bytes = base64URLDecoded(parts[0]) else { throw IdentityTokenError.malformed("the header is not base64url") }
        do {
            return try JSONDecoder().decode(Header.self, from: bytes)
        } catch {
            throw IdentityTokenError.malformed("the header does not parse")
        }
    }

    static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Why a key set fetch failed.
enum KeySetFetchError: Error, CustomStringConvertible {
    case status(Int)
    case tooLarge(Int)
    case timedOut(Duration)
    case notAKeySet(String)

    var description: String {
        switch self {
        case let .status(code): "the key set URL answered \(code)"
        case let .tooLarge(limit): "the key set is larger than \(limit) bytes"
        case let .timedOut(timeout): "the key set fetch took longer than \(timeout)"
        case let .notAKeySet(reason): "the answer is not a key set: \(reason)"
        }
    }
}

/// The kind of a key in a set, which fixes the algorithms it verifies.
enum KeyKind: Sendable {
    case rsa
    case p256

    init?(_ jwk: JWK) {
        if jwk.keyType == .rsa {
            self = .rsa
        } else if jwk.keyType == .ecdsa, jwk.curve?.rawValue == "P-256" {
            self = .p256
        } else {
            return nil
        }
        if let alg = jwk.algorithm?.rawValue, !(self == .rsa ? alg == "RS256" : alg == "ES256") { return nil }
    }

    func accepts(_ alg: String) -> Bool {
        switch self {
        case .rsa: alg == "RS256"
        case .p256: alg == "ES256"
        }
    }
}

/// A fetched key set: jwt-kit's collection of its keys and their kinds by key id.
struct KeySet: Sendable {
    let collection: JWTKeyCollection
    let kinds: [String: KeyKind]
    let maxAge: Duration
}

/// One provider's cached key set and the state of its fetches.
final class KeySetCache: Sendable {
    struct State {
        var keys: KeySet?
        var expires = ContinuousClock.now
        var lastFetch: ContinuousClock.Instant?
        var lastError: String?
        var inFlight: Task<KeySet, any Error>?
    }

    let state = Mutex(State())
}

/// A key set whose keys are decoded one by one, so that a key of a kind jwt-kit does not know
/// is skipped rather than failing the set.
struct LenientKeySet: Decodable {
    struct Entry: Decodable {
        let jwk: JWK?
        let use: String?
        let error: String?

        private enum CodingKeys: String, CodingKey { case use }

        init(from decoder: any Decoder) throws {
            use = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .use)
            do {
                jwk = try JWK(from: decoder)
                error = nil
            } catch {
                jwk = nil
                self.error = "\(error)"
            }
        }
    }

    let keys: [Entry]
}

/// The claims of an identity token that are checked or used.
struct IdentityClaims: JWTPayload {
    let iss: String
    let sub: String?
    let aud: [String]
    let exp: Double?
    let iat: Double?
    let nbf: Double?
    let nonce: String?
    let email: String?
    let emailVerified: Bool?

    private enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nbf, nonce, email
        case emailVerified = "email_verified"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decodeIfPresent(String.self, forKey: .sub)
        if let one = try? container.decode(String.self, forKey: .aud) {
            aud = [one]
        } else {
            aud = try container.decodeIfPresent([String].self, forKey: .aud) ?? []
        }
        exp = try container.decodeIfPresent(Double.self, forKey: .exp)
        iat = try container.decodeIfPresent(Double.self, forKey: .iat)
        nbf = try container.decodeIfPresent(Double.self, forKey: .nbf)
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        // Apple sends `email_verified` as a string ("true"), others as a boolean.
        if let flag = try? container.decode(Bool.self, forKey: .emailVerified) {
            emailVerified = flag
        } else {
            emailVerified = try container.decodeIfPresent(String.self, forKey: .emailVerified).map { $0 == "true" }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(iss, forKey: .iss)
        try container.encodeIfPresent(sub, forKey: .sub)
        try container.encode(aud, forKey: .aud)
        try container.encodeIfPresent(exp, forKey: .exp)
        try container.encodeIfPresent(iat, forKey: .iat)
        try container.encodeIfPresent(nbf, forKey: .nbf)
        try container.encodeIfPresent(nonce, forKey: .nonce)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encodeIfPresent(emailVerified, forKey: .emailVerified)
    }

    /// The claims are checked by the verifier, against its own clock and configuration.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
