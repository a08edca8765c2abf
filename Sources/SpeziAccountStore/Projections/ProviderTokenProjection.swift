//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Projections

/// The provider tokens the store keeps (`auth.provider-token-stored`) and those it owes a
/// revocation: a token moves from `tokens` to `pending` when its identity is unlinked or its
/// account deleted, and leaves `pending` with `auth.provider-token-revoked`. A revocation runner
/// (the account server's) works through `pending`; since the table is rebuilt from the log, a
/// revocation that did not go through before a crash or restart is still owed after it.
///
/// Keys are the account id, a zero byte and the issuer; values the sealed token as the event holds it.
struct ProviderTokenProjection: Projection {
    static let projectionName = "provider-tokens"
    static let version = 1

    let evolution: SchemaEvolution
    let vault: KeyVault?

    var name: String { Self.projectionName }
    var fingerprint: String { "provider-tokens v\(Self.version)" }
    var databaseNames: [String] { ["tokens", "pending"] }
    var buildsStreamByStream: Bool { true }

    func apply(_ record: some LogRecord, to state: ProjectionState, batch: inout Void) throws {
        guard let kind = record.withTypeBytes({ AccountEvent.Kind(nameBytes: $0) }) else { return }
        let accountId = record.streamID
        switch kind {
        case .providerTokenStored, .providerTokenRevoked, .identityUnlinked:
            let event = try record.withPayload { try AccountEvent.decode(kind, payload: $0, accountId: accountId, vault: vault) }
            switch event {
            case let .providerTokenStored(issuer, token):
                try state.put("tokens", key: Self.key(accountId, issuer), value: Array(token.utf8))
            case let .providerTokenRevoked(issuer):
                _ = try state.delete("pending", key: Self.key(accountId, issuer))
            case let .identityUnlinked(issuer, _):
                try owe(Self.key(accountId, issuer), in: state)
            default:
                // An unlinking whose key was destroyed since: the deletion that destroyed it moved every token.
                break
            }
        case .accountDeleted:
            var keys: [[UInt8]] = []
            let prefix = Array(accountId.utf8) + [0]
            try state.forEach("tokens", from: prefix) { key, _ in
                guard key.starts(with: prefix) else { return false }
                keys.append(Array(key))
                return true
            }
            for key in keys { try owe(key, in: state) }
        default:
            return
        }
    }

    /// Moves the token under `key` (if any) to the revocations owed.
    private func owe(_ key: [UInt8], in state: ProjectionState) throws {
        guard let token = try state.get("tokens", key: key) else { return }
        try state.put("pending", key: key, value: token)
        _ = try state.delete("tokens", key: key)
    }

    static func key(_ accountId: String, _ issuer: String) -> [UInt8] {
        Array(accountId.utf8) + [0] + Array(issuer.utf8)
    }
}
