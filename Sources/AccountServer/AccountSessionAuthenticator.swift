//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Hummingbird
import HummingbirdAuth
import SpeziAccountStore

/// The account a bearer token signs in: what ``AccountSessionAuthenticator`` puts in a request
/// context's `identity`.
public struct SignedInAccount: Sendable {
    /// The session token as the client sent it.
    public let token: String
    /// The account's state when the token was checked (its id, details and version).
    public let state: AccountState

    /// The signed-in account's id.
    public var accountId: String { state.accountId }
}

/// A hummingbird-auth authenticator for a `Bearer` session token the store knows
/// (`AccountStore.authenticate(token:)`): the token's account becomes the context's `identity`.
/// Without a token, or with one that signs in nobody, the identity stays nil and the route
/// decides; a storage failure while checking is thrown.
///
/// The account API uses it on its signed-in routes; a team that mounts the API in its own
/// application (``AccountServer/mount(on:at:)``) puts it in front of its own routes to know who is
/// signed in:
///
/// ```swift
/// struct AppContext: AuthRequestContext, RequestContext {
///     var coreContext: CoreRequestContextStorage
///     var identity: SignedInAccount?
///     init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
/// }
///
/// let router = Router(context: AppContext.self)
/// let accounts = AccountServer(store: store)
/// accounts.mount(on: router, at: "/accounts")
/// router.group("/notes")
///     .add(middleware: AccountSessionAuthenticator<AppContext>(store: store))
///     .get { _, context in
///         guard let account = context.identity else { throw HTTPError(.unauthorized) }
///         return "notes of \(account.accountId)"
///     }
/// ```
public struct AccountSessionAuthenticator<Context: AuthRequestContext<SignedInAccount>>: AuthenticatorMiddleware {
    let store: AccountStore

    /// An authenticator for the sessions of `store`.
    ///
    /// - Parameter store: the store whose session tokens sign in.
    public init(store: AccountStore) {
        self.store = store
    }

    /// The account the request's bearer token signs in.
    ///
    /// - Parameters:
    ///   - request: the request; only its `Authorization` header is read.
    ///   - context: the request's context.
    /// - Returns: the signed-in account, or nil without a token or for one that signs in nobody.
    /// - Throws: the store's errors when the token could not be checked (a storage failure).
    public func authenticate(request: Request, context: Context) async throws -> SignedInAccount? {
        guard let bearer = request.headers.bearer else { return nil }
        do {
            return SignedInAccount(token: bearer.token, state: try await store.authenticate(token: bearer.token))
        } catch AccountStoreError.invalidSession {
            return nil
        }
    }
}

extension Request {
    /// The `Bearer` token of the `Authorization` header, unchecked; 401 `unauthenticated` without one.
    func bearerToken() throws -> String {
        guard let bearer = headers.bearer else { throw Problem.unauthenticated }
        return bearer.token
    }
}
