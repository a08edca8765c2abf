//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import Foundation
import SpeziAccountStore

/// Who may ask `GET /v1/positions/{position}` whether this node has applied the log up to a
/// position: a signed-in caller, or whoever holds the receipt of a `202 accepted` answer (a write
/// that committed before this node could show it). Anyone else is answered 401, so that strangers
/// cannot read the log's length off the route.
///
/// A receipt is 22 characters of base64url: the first 16 bytes of the HMAC-SHA256 of the position
/// under a key every server of the store derives alike, so a client may poll any node.
struct PositionReceipts: Sendable {
    private let key: DerivedKey

    init(store: AccountStore) {
        self.key = DerivedKey { try await store.derivedKey(purpose: "position-receipt v1") }
    }

    /// The receipt of `position`.
    func receipt(for position: UInt64) async throws -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("position\u{0}\(position)".utf8), using: try await key.get())
        return base64urlString(Data(mac.prefix(16)))
    }

    /// Whether `receipt` is the receipt of `position`.
    func isValid(_ receipt: String, for position: UInt64) async throws -> Bool {
        PasswordHasher.constantTimeEquals(Array(try await self.receipt(for: position).utf8), Array(receipt.utf8))
    }
}
