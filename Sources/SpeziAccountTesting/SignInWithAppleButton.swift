//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation

/// What an app asks Apple for when its Sign in with Apple button is tapped (the headless
/// `ASAuthorizationAppleIDRequest`): the scopes and the nonce, which Apple puts into the identity
/// token as its SHA-256 in hex.
public struct SignInWithAppleRequest: Sendable, Equatable {
    /// The scopes asked for (`email`, `fullName`).
    public var requestedScopes: [String] = []
    /// The nonce, already hashed as Apple expects it (``SignInWithAppleButton/hashedNonce(_:)``).
    public var nonce: String?

    /// An empty request.
    public init() {}
}

/// What Apple hands the app after the user agreed (the headless `ASAuthorizationAppleIDCredential`).
public struct SignInWithAppleCredential: Sendable, Equatable {
    /// The identity token (a JWT Apple signed), as a string.
    public var identityToken: String
    /// The authorization code, which the server exchanges for a refresh token it can revoke.
    public var authorizationCode: String?
    /// The user's name, given only at the first sign-in.
    public var fullName: PersonNameComponents?

    /// A credential.
    ///
    /// - Parameters:
    ///   - identityToken: The identity token.
    ///   - authorizationCode: The authorization code.
    ///   - fullName: The user's name (first sign-in only).
    public init(identityToken: String, authorizationCode: String? = nil, fullName: PersonNameComponents? = nil) {
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.fullName = fullName
    }
}

/// The headless stand-in for SwiftUI's `SignInWithAppleButton`, for tests and tools: the same two
/// callbacks (`onRequest` fills in the request, `onCompletion` gets the outcome), and ``tap(answering:)``
/// in place of the user's tap, with the test playing Apple's part.
///
/// ```swift
/// let nonce = SignInWithAppleButton.makeNonce()
/// let button = SignInWithAppleButton { request in
///     request.requestedScopes = ["email"]
///     request.nonce = SignInWithAppleButton.hashedNonce(nonce)
/// } onCompletion: { result in
///     let credential = try result.get()
///     try await service.signIn(
///         identityProvider: "apple", identityToken: credential.identityToken, nonce: nonce,
///         authorizationCode: credential.authorizationCode)
/// }
/// try await button.tap { request in try await apple.credential(for: request) }
/// ```
public struct SignInWithAppleButton: Sendable {
    private let onRequest: @Sendable (inout SignInWithAppleRequest) -> Void
    private let onCompletion: @Sendable (Result<SignInWithAppleCredential, any Error>) async throws -> Void

    /// A button.
    ///
    /// - Parameters:
    ///   - onRequest: Fills in the request (scopes, nonce).
    ///   - onCompletion: Gets Apple's credential, or the error that ended the sign-in.
    public init(
        onRequest: @escaping @Sendable (inout SignInWithAppleRequest) -> Void,
        onCompletion: @escaping @Sendable (Result<SignInWithAppleCredential, any Error>) async throws -> Void
    ) {
        self.onRequest = onRequest
        self.onCompletion = onCompletion
    }

    /// What a tap does: builds the request, lets `apple` answer it (or fail, as a user who cancels),
    /// and hands the outcome to `onCompletion`.
    ///
    /// - Parameter apple: Plays Apple's part: a credential for the request.
    /// - Throws: What `onCompletion` throws.
    public func tap(answering apple: @Sendable (SignInWithAppleRequest) async throws -> SignInWithAppleCredential) async throws {
        var request = SignInWithAppleRequest()
        onRequest(&request)
        let result: Result<SignInWithAppleCredential, any Error>
        do {
            result = .success(try await apple(request))
        } catch {
            result = .failure(error)
        }
        try await onCompletion(result)
    }

    /// A fresh random nonce (32 bytes, hex): keep it, and put its hash into the request.
    ///
    /// - Returns: The raw nonce.
    public static func makeNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The nonce as Apple expects it in the request: its SHA-256, in lowercase hex.
    ///
    /// - Parameter nonce: The raw nonce.
    /// - Returns: The hash to send to Apple.
    public static func hashedNonce(_ nonce: String) -> String {
        SHA256.hash(data: Array(nonce.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
