//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import EventLogProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import SpeziAccount
import SpeziAccountStore

/// The account server's own work for `server-load`'s read and mixed rows, without sockets or HTTP
/// parsing, for callgrind: `requests` requests through the API mounted on a Hummingbird router and
/// sent by its in-process test client, one at a time (each answered with its access-log line), spread over 8 accounts with a session each.
/// Every `patchEvery`-th is a `PATCH /v1/account` (0: none), the others `GET /v1/account`. The
/// store is relaxed (no flush to wait for) and hashes with test parameters, so that what is
/// counted is the same from run to run. Returns the number of answers that were 200.
func serverRoutes(in directory: URL, requests: Int, patchEvery: Int) async throws -> Int {
    let (store, accountIds) = try await hotStore(in: directory, sync: .relaxed)
    var tokens: [String] = []
    for accountId in accountIds {
        tokens.append(try await store.startSession(for: accountId, validity: .seconds(3_600)).token)
    }
    let router = try hotRouter(store)
    let sessions = tokens
    let succeeded = try await Application(router: router).test(.router) { client in
        var succeeded = 0
        for index in 0..<requests {
            var headers: HTTPFields = [.authorization: "Bearer \(sessions[index % sessions.count])"]
            let response: TestResponse
            if patchEvery > 0, index % patchEvery == patchEvery - 1 {
                headers[.contentType] = "application/json"
                let value = (index / patchEvery) % 2 == 0 ? "female" : "male"
                response = try await client.execute(
                    uri: "/v1/account", method: .patch, headers: headers,
                    body: ByteBuffer(string: #"{"set":{"genderIdentity":"\#(value)"}}"#))
            } else {
                response = try await client.execute(uri: "/v1/account", method: .get, headers: headers)
            }
            if response.status == .ok { succeeded += 1 }
        }
        return succeeded
    }
    await store.close()
    return succeeded
}

/// The account server's own work for `server-load`'s login row, for callgrind and `strace -c`:
/// `requests` sign-ins (`POST /v1/sessions`) through the API mounted on a Hummingbird router,
/// one at a time, over 8 accounts. The store hashes with test parameters (the derivation is the
/// peers' too; what is counted is the rest) and is durable, as in `server-load`. Returns the
/// number of answers that were 201.
func serverLogins(in directory: URL, requests: Int) async throws -> Int {
    let (store, _) = try await hotStore(in: directory, sync: .durable)
    let router = try hotRouter(store)
    let succeeded = try await Application(router: router).test(.router) { client in
        var succeeded = 0
        for index in 0..<requests {
            let body = #"{"userId":"hot\#(index % 8)@example.org","password":"correct horse battery"}"#
            let response = try await client.execute(
                uri: "/v1/sessions", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
            if response.status == .created { succeeded += 1 }
        }
        return succeeded
    }
    await store.close()
    return succeeded
}

/// A fresh store in `directory` (replaced) with test hashing and the 8 accounts `hot0…hot7@example.org`
/// (password `correct horse battery`); returns it and their ids.
func hotStore(in directory: URL, sync: Durability) async throws -> (AccountStore, [String]) {
    try? FileManager.default.removeItem(at: directory)
    var options = AccountStoreOptions()
    options.sync = sync
    options.passwordParameters = .insecureTesting
    options.allowWeakPasswordParameters = true
    let store = try await AccountStore(directory: directory.path, options: options)
    var accountIds: [String] = []
    for index in 0..<8 {
        var details = AccountDetails()
        details.userId = "hot\(index)@example.org"
        details.password = "correct horse battery"
        details.name = PersonNameComponents(givenName: "Hot", familyName: "\(index)")
        accountIds.append(try await store.signup(details).accountId)
    }
    return (store, accountIds)
}

/// The account API mounted on a router, with the per-client and per-account limits the load
/// would meet lifted, and its default logger (as in server-load: one access line a request).
func hotRouter(_ store: AccountStore) throws -> Router<BasicRequestContext> {
    var configuration = AccountServerConfiguration()
    let unlimited = RateLimit(burst: 1_000_000, perMinute: 1_000_000)
    configuration.rateLimits.loginsPerClient = unlimited
    configuration.rateLimits.loginsPerAccount = unlimited
    configuration.rateLimits.recordsPerClient = unlimited
    let router = Router()
    try AccountServer(store: store, configuration: configuration).mount(on: router)
    return router
}
