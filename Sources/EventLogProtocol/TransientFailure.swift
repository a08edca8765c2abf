//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// An error that may say a backend is briefly unavailable (a lost connection, a restarting server,
/// a deadline that ran out): where ``isTransient`` is true, the same operation is retried later
/// instead of being taken as the final word. The projections retry such a failure of a record's
/// application with capped exponential backoff and never stop a projection for it.
public protocol TransientFailure: Error {
    /// True when the same operation may succeed later (a lost connection, a restarting server):
    /// retried, not fatal.
    var isTransient: Bool { get }
}

/// Whether `error` is transient (see ``TransientFailure``).
///
/// - Parameter error: any error.
/// - Returns: true when `error` is a ``TransientFailure`` that says it is transient.
public func isTransientFailure(_ error: any Error) -> Bool {
    (error as? any TransientFailure)?.isTransient ?? false
}

extension EventLogError: TransientFailure {
    /// A storage failure is transient when its cause says so (a lost connection to the log's
    /// server); every other case is the final word.
    public var isTransient: Bool {
        if case let .storage(underlying) = self { return isTransientFailure(underlying) }
        return false
    }
}
