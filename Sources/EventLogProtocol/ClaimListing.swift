//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A backend that can list its claims by prefix (the LMDB log, whose claims are keys in order).
/// The store uses it, where a backend offers it, to tell how an older store keyed its user ids;
/// elsewhere it reads the records instead.
public protocol ClaimListing: EventLogReader {
    /// Up to `limit` claims that start with `prefix`, in key order, with the stream that holds each.
    ///
    /// - Parameters:
    ///   - prefix: the start every listed claim shares (empty: all claims).
    ///   - limit: the most claims to list.
    /// - Returns: the claims and the streams that hold them, in the byte order of the claims.
    /// - Throws: ``EventLogError`` when the log is closed or its storage fails.
    func claims(withPrefix prefix: String, limit: Int) throws -> [(claim: String, owner: String)]
}
