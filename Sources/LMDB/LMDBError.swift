//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CLMDB
import Foundation

/// An error reported by LMDB or by this wrapper, with the operation and the path it concerns.
public struct LMDBError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The LMDB return code (negative, `MDB_*`) or an `errno` value (positive).
    public let code: Int32
    /// The operation that failed, e.g. `"mdb_txn_commit"`.
    public let operation: String
    /// The environment's path, when known.
    public let path: String?

    /// Creates an error for `operation` that failed with `code`.
    ///
    /// - Parameters:
    ///   - code: LMDB's return code or an `errno` value.
    ///   - operation: what failed, for the message.
    ///   - path: the environment's path, when known.
    public init(code: Int32, operation: String, path: String? = nil) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    /// The text LMDB (or the C library) gives for the code.
    public var reason: String {
        String(cString: mdb_strerror(code))
    }

    /// True when the map is full and growing it would help.
    public var isMapFull: Bool { code == MDB_MAP_FULL }
    /// True when the device has no space left (`ENOSPC`) or the quota is exceeded (`EDQUOT`).
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
    /// True when the file is not an LMDB environment, or is truncated or damaged.
    public var isInvalidFile: Bool { code == MDB_INVALID || code == MDB_CORRUPTED || code == MDB_PAGE_NOTFOUND || code == MDB_VERSION_MISMATCH }

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        let location = path.map { " at \($0)" } ?? ""
        return "LMDB \(operation) failed\(location): \(reason) (code \(code))"
    }
}

@inline(__always)
func check(_ code: Int32, _ operation: @autoclosure () -> String, path: String? = nil) throws(LMDBError) {
    if code != MDB_SUCCESS {
        throw LMDBError(code: code, operation: operation(), path: path)
    }
}
