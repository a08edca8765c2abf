//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Synchronization

/// A key the store derives for one purpose (`AccountStore.derivedKey(purpose:)`), derived on first
/// use and kept: every server of the store derives the same one.
final class DerivedKey: Sendable {
    private let source: @Sendable () async throws -> SymmetricKey
    private let cached = Mutex<SymmetricKey?>(nil)

    init(_ source: @escaping @Sendable () async throws -> SymmetricKey) {
        self.source = source
    }

    func get() async throws -> SymmetricKey {
        if let key = cached.withLock({ $0 }) { return key }
        let key = try await source()
        cached.withLock { $0 = key }
        return key
    }
}
