//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// An OpenID Connect provider whose identity tokens a server accepts: Sign in with Apple, Google, or
/// an organization's own provider. Configuration only; ``IdentityTokenVerifier`` does the checking.
public struct IdentityProviderConfiguration: Sendable, Equatable {
    /// How the token's `nonce` claim relates to the nonce the app sends with it.
    public enum NonceForm: String, Sendable, Equatable {
        /// The token carries the nonce as the app sent it (Google, most providers).
        case raw
        /// The token carries the SHA-256 of the app's nonce in lower-case hex (Sign in with Apple:
        /// the app hands Apple the hash and keeps the raw nonce).
        case sha256Hex = "sha256-hex"
    }

    /// The provider's name in requests and routes (`apple`, `google`): 1–32 lower-case letters,
    /// digits and `-`.
    public var id: String
    /// The issuer the tokens must name in `iss`, exactly.
    public var issuer: String
    /// Where the provider publishes its signing keys (a JWKS document): `https`, or `http` on a
    /// loopback address only.
    public var jwksURL: String
    /// The audiences accepted in `aud`: the app's client ids (for Apple, the app's bundle id or its
    /// Services ID).
    public var clientIds: [String]
    /// Whether a new account takes the token's `email` as its user id, when the provider says it is
    /// verified (`email_verified`). Otherwise the account has no user id and signs in with the
    /// provider only.
    public var emailBecomesUserId: Bool
    /// How the token's `nonce` claim is compared with the app's nonce.
    public var nonce: NonceForm
    /// Whether a request must send a nonce (and the token carry the matching one). On by default:
    /// a token without one could be replayed by whoever saw it.
    public var requiresNonce: Bool
    /// The signature algorithms accepted (`alg` of the token's header and of the key).
    public var algorithms: Set<String>
    /// The provider's token and revocation endpoints, or nil: with them, an authorization code the
    /// app sends beside its identity token is exchanged for a refresh token, which the store keeps
    /// and revokes when the account is deleted or the identity unlinked (Apple requires it).
    public var tokenEndpoints: ProviderTokenEndpoints?

    /// A provider.
    ///
    /// - Parameters:
    ///   - id: The provider's name in requests and routes.
    ///   - issuer: The `iss` its tokens carry.
    ///   - jwksURL: Where its signing keys are published.
    ///   - clientIds: The accepted audiences.
    ///   - emailBecomesUserId: Whether a new account takes the verified e-mail address as user id.
    ///   - nonce: How the token's nonce relates to the app's.
    ///   - requiresNonce: Whether a nonce is required.
    ///   - algorithms: The accepted signature algorithms.
    public init(
        id: String, issuer: String, jwksURL: String, clientIds: [String], emailBecomesUserId: Bool = false, nonce: NonceForm = .raw,
        requiresNonce: Bool = true, algorithms: Set<String> = ["RS256", "ES256"]
    ) {
        self.id = id
        self.issuer = issuer
        self.jwksURL = jwksURL
        self.clientIds = clientIds
        self.emailBecomesUserId = emailBecomesUserId
        self.nonce = nonce
        self.requiresNonce = requiresNonce
        self.algorithms = algorithms
    }

    /// Sign in with Apple: issuer `https://appleid.apple.com`, Apple's published keys, RS256, the
    /// nonce as its SHA-256 in hex.
    ///
    /// - Parameters:
    ///   - clientIds: The app's bundle id (and its Services ID, for the web).
    ///   - emailBecomesUserId: Whether a new account takes the verified e-mail address as user id.
    /// - Returns: The configuration, with the id `apple`.
    public static func signInWithApple(clientIds: [String], emailBecomesUserId: Bool = false) -> Self {
        Self(
            id: "apple", issuer: "https://appleid.apple.com", jwksURL: "https://appleid.apple.com/auth/keys", clientIds: clientIds,
            emailBecomesUserId: emailBecomesUserId, nonce: .sha256Hex, algorithms: ["RS256"])
    }

    /// Google: issuer `https://accounts.google.com`, Google's published keys, RS256, the raw nonce.
    ///
    /// - Parameters:
    ///   - clientIds: The app's OAuth client ids.
    ///   - emailBecomesUserId: Whether a new account takes the verified e-mail address as user id.
    /// - Returns: The configuration, with the id `google`.
    public static func google(clientIds: [String], emailBecomesUserId: Bool = false) -> Self {
        Self(
            id: "google", issuer: "https://accounts.google.com", jwksURL: "https://www.googleapis.com/oauth2/v3/certs", clientIds: clientIds,
            emailBecomesUserId: emailBecomesUserId, nonce: .raw, algorithms: ["RS256"])
    }

    /// What is wrong with the configuration, or nil: an id that is not 1–32 of `a-z0-9-`, an empty
    /// issuer or list of client ids, or a key URL that is neither `https` nor `http` on loopback.
    public var problem: String? {
        guard (1...32).contains(id.utf8.count), id.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D })
        else {
            return "provider id \(id.debugDescription) is not 1-32 of a-z, 0-9 and -"
        }
        if issuer.isEmpty || issuer.utf8.count > IdentityTokenVerifier.maxIdentifierBytes { return "provider \(id): the issuer is empty or too long" }
        if clientIds.isEmpty { return "provider \(id): no client ids" }
        guard let url = URL(string: jwksURL), let scheme = url.scheme?.lowercased(), let host = url.host else {
            return "provider \(id): the key URL \(jwksURL) does not parse"
        }
        let loopback = host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
        guard scheme == "https" || (scheme == "http" && loopback) else { return "provider \(id): the key URL must be https" }
        return nil
    }
}

/// Bounds on what verifying identity tokens may spend: fetches of key sets, time, bytes.
public struct IdentityTokenLimits: Sendable, Equatable {
    /// How long a fetch of a key set may take before it is given up.
    public var fetchTimeout: Duration = .seconds(5)
    /// The shortest time between two fetches of one provider's key set (the first, refreshes, and
    /// refetches for an unknown `kid`). Within it a token with an unknown `kid` is refused without
    /// a fetch, and known keys stay in use past their expiry: a flood of made-up key ids costs the
    /// provider at most one request per interval.
    public var minimumRefetchInterval: Duration = .seconds(10)
    /// How far a token's `iat` may be in the future, and its `exp` in the past, for clocks that differ.
    public var clockSkew: Duration = .seconds(60)
    /// The shortest time a key set is kept, whatever its `Cache-Control` says.
    public var minimumCacheAge: Duration = .seconds(60)
    /// The longest time a key set is kept.
    public var maximumCacheAge: Duration = .seconds(24 * 3_600)
    /// How long a key set without `Cache-Control: max-age` is kept.
    public var defaultCacheAge: Duration = .seconds(3_600)
    /// The largest key set document read.
    public var maxKeySetBytes = 256 * 1024
    /// The longest token accepted.
    public var maxTokenBytes = 16 * 1024

    /// The defaults above.
    public init() {}
}
