//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import SpeziAccountStore

/// `Idempotency-Key`: a client that lost an answer (a timeout, a crash, a dropped connection)
/// sends the same request again with the same key and gets the first answer, from any server on
/// the log, instead of a 409 or a second account. The store derives the events' ids (and a new
/// account's id, and a new session's secret) from the key, so the retry appends nothing.
///
/// The key the store sees stands for the whole request: the client's key, the route, the body's
/// bytes and, for the bearer routes, the session the token names. The same client key with
/// another body is another request (a signup with it meets the first account's user id: 409);
/// nobody without the token can replay a bearer request.
extension AccountRoutes {
    static let idempotencyHeader = HTTPField.Name("Idempotency-Key")!

    /// The store's idempotency key for this request (nil when the client sent none).
    ///
    /// - Throws: a 400 problem for a key that is empty, longer than 255 characters or not
    ///   printable ASCII.
    func idempotencyKey(_ request: inout Request, route: String, token: String? = nil) async throws -> String? {
        guard let key = request.headers[Self.idempotencyHeader] else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw Problem(
                "invalid-idempotency-key", .badRequest, "The Idempotency-Key header is not one this server takes.",
                detail: "1 to 255 printable ASCII characters, without spaces")
        }
        let body = try await collect(&request)
        var hash = SHA256()
        for part in [route, key, token.flatMap(AccountStore.sessionHash(ofToken:)) ?? ""] {
            hash.update(data: Data(part.utf8))
            hash.update(data: [0])
        }
        hash.update(data: Data(body.readableBytesView))
        return hash.finalize().hexString
    }

    /// A keyed retry of `command` by the holder of `token` whose first attempt committed and ended
    /// the token's session (a password change, a deletion): the account it acted on. Nil when the
    /// request carries no key or the log holds no such attempt; the request then answers as an
    /// unauthenticated one.
    ///
    /// The token must be one whose session a password change or the deletion ended within the last
    /// day (read from the account's state); any other token, a forged one among them, is refused
    /// before any of the stream is read.
    func committedRetry(_ command: KeyedCommand, token: String, context: AccountStore.Context) async throws -> String? {
        guard context.idempotencyKey != nil, let accountId = try await store.accountOfEndedSession(token: token) else { return nil }
        return try await store.hasCommitted(command, accountId: accountId, context: context) ? accountId : nil
    }

    /// Runs a keyed signup: a retry whose account was deleted since is 409 `idempotency-key-spent`.
    func spendingKey<T>(_ key: String?, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch AccountStoreError.accountNotFound where key != nil {
            throw Problem.idempotencyKeySpent
        } catch AccountStoreError.invalidSession where key != nil {
            throw Problem.idempotencyKeySpent
        }
    }

    /// A session for the account a keyed signup created. A retry whose account was deleted since
    /// has none to give: 409 `idempotency-key-spent` (not the 401 of a bad token, which this
    /// request does not carry).
    func session(forCreated accountId: String, _ request: Request, client: String, idempotencyKey key: String?) async throws -> AccountSession {
        do {
            return try await store.startSession(
                for: accountId, validity: configuration.sessionValidity, context: context(request, idempotencyKey: key))
        } catch AccountStoreError.accountNotFound where key != nil {
            throw Problem.idempotencyKeySpent
        } catch AccountStoreError.invalidSession where key != nil {
            throw Problem.idempotencyKeySpent
        }
    }
}

extension Problem {
    static let idempotencyKeyUsed = Problem(
        "idempotency-key-used", .conflict,
        "This Idempotency-Key already signed in anonymously; a replay hands out no session: sign in anonymously again with a new key.")

    static let idempotencyKeySpent = Problem(
        "idempotency-key-spent", .conflict, "The account this Idempotency-Key created is deleted: send a new key for a new account.")
}
