//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation

/// Sealed bytes: personal data encrypted with an account's key (ChaCha20-Poly1305).
///
/// Layout: `0x02` (the sealed encoding version; plain payloads start with `0x01`), a 12-byte
/// nonce, the ciphertext, a 16-byte tag. The associated data binds the bytes to their place: the
/// account id, a zero byte, and the event type (or `state` / `external` for projection values), so
/// sealed bytes copied to another account or event type do not open.
package enum Sealing {
    package static let version: UInt8 = 2

    package enum Failure: Error, CustomStringConvertible {
        case damaged(String)
        package var description: String {
            switch self {
            case let .damaged(reason): "sealed data does not open: \(reason)"
            }
        }
    }

    package static func associatedData(_ accountId: String, _ label: String) -> [UInt8] {
        Array(accountId.utf8) + [0] + Array(label.utf8)
    }

    package static func isSealed(_ bytes: UnsafeRawBufferPointer) -> Bool { bytes.first == version }

    package static func seal(_ plaintext: [UInt8], key: SymmetricKey, accountId: String, label: String) throws -> [UInt8] {
        let box = try ChaChaPoly.seal(plaintext, using: key, authenticating: associatedData(accountId, label))
        return [version] + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
    }

    package static func open(_ sealed: UnsafeRawBufferPointer, key: SymmetricKey, accountId: String, label: String) throws -> [UInt8] {
        guard sealed.count >= 1 + 12 + 16, sealed.first == version else { throw Failure.damaged("too short or not sealed") }
        do {
            let box = try ChaChaPoly.SealedBox(combined: Data(sealed[1...]))
            return Array(try ChaChaPoly.open(box, using: key, authenticating: associatedData(accountId, label)))
        } catch {
            throw Failure.damaged("authentication failed")
        }
    }
}
