//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation

/// The signature the Standard Webhooks specification defines: HMAC-SHA256, keyed with the
/// base64 part of a `whsec_` secret, over `<webhook-id>.<webhook-timestamp>.<body>`, sent as
/// `v1,<base64>` in `webhook-signature`.
public enum WebhookSignature {
    /// The `webhook-signature` value for one delivery.
    ///
    /// - Parameters:
    ///   - secret: The subscription's secret (`whsec_` and base64; a secret without the prefix is taken as base64 too).
    ///   - id: The `webhook-id`.
    ///   - timestamp: The `webhook-timestamp` (seconds since 1970).
    ///   - body: The body, as sent.
    /// - Returns: `v1,` and the base64 HMAC.
    /// - Throws: ``Failure/secret`` when the secret is not base64.
    public static func sign(secret: String, id: String, timestamp: Int64, body: Data) throws -> String {
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let key = Data(base64Encoded: encoded), !key.isEmpty else { throw Failure.secret }
        var mac = HMAC<SHA256>(key: SymmetricKey(data: key))
        mac.update(data: Data("\(id).\(timestamp).".utf8))
        mac.update(data: body)
        return "v1," + Data(mac.finalize()).base64EncodedString()
    }

    /// Why a signature cannot be made.
    public enum Failure: Error, Equatable {
        /// The secret is not base64.
        case secret
    }
}
