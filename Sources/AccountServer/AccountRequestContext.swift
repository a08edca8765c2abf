//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Hummingbird
import HummingbirdAuth
import SpeziAccountStore

/// What the account API's routes need of a request context: who the client is, for the
/// per-client limits, and the signed-in account (set by ``AccountSessionAuthenticator``).
///
/// The server's own context conforms; so does ``MountedAccountContext``, the context of the
/// routes ``AccountServer/mount(on:at:)`` adds to a team's application.
public protocol AccountRequestContext: AuthRequestContext<SignedInAccount> {
    /// The socket peer's address, when the context knows it.
    var peer: String? { get }
    /// Who the per-client limits count the request for: the peer, or the client a trusted proxy
    /// forwarded for (IPv6 grouped by /64); "unknown" without a socket.
    var client: String { get set }
}

/// The context of the account API's routes inside a team's own Hummingbird application, made
/// from that application's context by Hummingbird (`RouterMethods.group(_:context:)`). The peer
/// address is taken from a parent context that has one (`RemoteAddressRequestContext`).
public struct MountedAccountContext<Parent: RequestContext>: ChildRequestContext, AccountRequestContext {
    /// Hummingbird's storage of the request's context.
    public var coreContext: CoreRequestContextStorage
    /// The socket peer's address, when the parent context has one.
    public let peer: String?
    /// Who the per-client limits count the request for.
    public var client: String
    /// The signed-in account, once ``AccountSessionAuthenticator`` found one.
    public var identity: SignedInAccount?

    /// The account API's context for a request of the team's application.
    ///
    /// - Parameter context: the application's context of the request.
    /// - Throws: never.
    public init(context: Parent) throws {
        coreContext = context.coreContext
        peer = (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress
        client = peer.map(ClientAddressResolver.group) ?? "unknown"
    }
}

/// What a route's handler gets of its context, whatever the context's type: the client and the
/// signed-in account.
struct RouteContext: Sendable {
    let client: String
    let identity: SignedInAccount?

    init(_ context: some AccountRequestContext) {
        client = context.client
        identity = context.identity
    }

    /// The signed-in account: 401 `unauthenticated` without a bearer token, the store's
    /// `invalidSession` (401 `invalid-session`) for a token that signs in nobody.
    func session(_ request: Request) throws -> SignedInAccount {
        if let identity { return identity }
        _ = try request.bearerToken()
        throw AccountStoreError.invalidSession
    }
}
