//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A backend that can list its claims by prefix (the LMDB log, whose claims are keys in order).
/// The store uses it, where a backend offers it, to tell how an older store keyed its user ids;
/// elsewhere it reads the records instead.
public protocol ClaimListing: EventLogReader {
    /// Up to `limit` claims that start with `prefix`, in key order, with the stream that holds each.
    func claims(withPrefix prefix: String, limit: Int) throws -> [(claim: String, owner: String)]
}
