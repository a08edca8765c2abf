//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Hummingbird
import HummingbirdAuth
import SpeziAccountStore

/// The account a bearer token signs in, as the request context's `identity`.
struct SignedInSession: Sendable {
    /// The token as the client sent it.
    let token: String
    /// The account's state when the token was checked.
    let state: AccountState
}

/// A hummingbird-auth authenticator for the account API: a `Bearer` token the store knows
/// (`AccountStore.authenticate(token:)`) becomes the context's ``SignedInSession``. Without a
/// token, or with one that signs in nobody, the identity stays nil and the route decides (a
/// keyed retry of a change that ended its own session is still answered); a storage failure
/// while checking is thrown, for ``ProblemMiddleware``.
struct AccountSessionAuthenticator: AuthenticatorMiddleware {
    typealias Context = ServerRequestContext

    let store: AccountStore

    func authenticate(request: Request, context: Context) async throws -> SignedInSession? {
        guard let bearer = request.headers.bearer else { return nil }
        do {
            return SignedInSession(token: bearer.token, state: try await store.authenticate(token: bearer.token))
        } catch AccountStoreError.invalidSession {
            return nil
        }
    }
}

extension ServerRequestContext {
    /// The signed-in session: 401 `unauthenticated` without a bearer token, the store's
    /// `invalidSession` (401 `invalid-session`) for a token that signs in nobody.
    func session(_ request: Request) throws -> SignedInSession {
        if let identity { return identity }
        _ = try request.bearerToken()
        throw AccountStoreError.invalidSession
    }
}

extension Request {
    /// The `Bearer` token of the `Authorization` header, unchecked; 401 `unauthenticated` without one.
    func bearerToken() throws -> String {
        guard let bearer = headers.bearer else { throw Problem.unauthenticated }
        return bearer.token
    }
}
