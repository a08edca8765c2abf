//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Hummingbird

extension AccountServer {
    /// Adds the account API to a team's own Hummingbird application, under `path`: every route of
    /// `openapi.yaml` except the audit console's (`/admin/…`), with the same per-client limits,
    /// problem details and sessions as the standalone server. The routes run with a
    /// ``MountedAccountContext`` made from the application's context; put
    /// ``AccountSessionAuthenticator`` in front of the application's own routes to know who is
    /// signed in there.
    ///
    /// What stays the application's: its socket, its connection limits and idle timeouts, its
    /// access log and response headers. What a standalone server adds on top (the connection cap
    /// per client, 405 answers with `Allow`, the security headers, the audit console) is not
    /// mounted; run ``run()`` for those.
    ///
    /// ```swift
    /// let router = Router(context: BasicRequestContext.self)
    /// router.get("/") { _, _ in "the team's own page" }
    /// try AccountServer(store: store).mount(on: router, at: "/accounts")
    /// // POST /accounts/v1/accounts, GET /accounts/v1/account, …
    /// ```
    ///
    /// - Parameters:
    ///   - router: the application's router, or a group of it.
    ///   - path: the prefix of the API's paths ("" for none).
    /// - Throws: ``ServerResourceError`` when the OpenAPI document is missing from the server's
    ///   resource bundle (nothing is added then).
    public func mount<Parent: RequestContext>(on router: some RouterMethods<Parent>, at path: RouterPath = "") throws {
        _ = try ServerResources.bundled.get()
        let group = router.group(path, context: MountedAccountContext<Parent>.self)
            .add(middleware: RequestIdentityMiddleware(trustedProxies: configuration.trustedProxies))
        addAPI(to: group, resolver: ClientAddressResolver(trustedProxies: configuration.trustedProxies, header: configuration.forwardedHeader))
    }

    /// The API as both the standalone server and a mount add it: who the client is (for the
    /// limits), then problem details for what a route throws, then the routes (each first refusing
    /// bodies that are not JSON).
    func addAPI<Context: AccountRequestContext>(to router: some RouterMethods<Context>, resolver: ClientAddressResolver) {
        _ = router.add(middleware: ClientAddressMiddleware<Context>(resolver: resolver))
        _ = router.add(
            middleware: ProblemMiddleware<Context>(
                maxBodyBytes: configuration.maxBodyBytes, now: { [store = routes.store] in store.now() },
                receipts: routes.receipts))
        router.addRoutes(routes.collection(context: Context.self))
    }
}
