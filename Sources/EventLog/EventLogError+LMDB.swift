//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
internal import LMDB
import LogRecordFormat

extension LMDBError: StorageFailureReason {}

extension EventLogError {
    /// Wraps an LMDB error in the case that describes it.
    static func wrapping(_ error: any Error, path: String) -> any Error {
        guard let lmdb = error as? LMDBError else { return error }
        if lmdb.isDiskFull { return EventLogError.diskFull(path: path, underlying: lmdb) }
        if lmdb.code == EBADF && lmdb.operation.contains("closed") { return EventLogError.closed(path: path) }
        if lmdb.isInvalidFile { return EventLogError.notAnEventLog(path: path, reason: "\(lmdb.reason) (during \(lmdb.operation))") }
        return EventLogError.storage(lmdb)
    }
}
