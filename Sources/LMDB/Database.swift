//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB
import Synchronization

public struct Database: Sendable, Hashable {
    let handle: MDB_dbi
    /// Its name.
    public let name: String
}

/// Size figures of one database.
public struct DatabaseStatistics: Sendable, Equatable {
    /// The number of entries.
    public let entries: Int
    /// The depth of the B-tree.
    public let depth: Int
    /// The page size in bytes.
    public let pageSize: Int
    /// Branch, leaf and overflow pages in use.
    public let pages: Int
}

/// The named databases an environment has opened, by handle.
final class HandleRegistry: Sendable {
    private let names = Mutex<[MDB_dbi: String]>([:])

    func opened(_ handle: MDB_dbi, _ name: String) {
        names.withLock { $0[handle] = name }
    }

    func closed(_ handle: MDB_dbi) {
        _ = names.withLock { $0.removeValue(forKey: handle) }
    }

    func name(of handle: MDB_dbi) -> String? {
        names.withLock { $0[handle] }
    }

    /// The handles in ascending order, the order in which a fresh environment hands them out.
    func snapshot() -> [(MDB_dbi, String)] {
        names.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }
}
