//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import Projections
import SpeziAccount

/// Size limits on what one operation may write: hostile or broken clients get a clear error
/// before anything is hashed, encoded or appended.
public struct AccountStoreLimits: Sendable, Equatable {
    /// The largest encoded value of one key (JSON bytes).
    public var maxValueBytes = 64 * 1024
    /// The most keys one operation may set or remove.
    public var maxKeys = 256
    /// The longest user id (bytes of UTF-8); it becomes an LMDB key, which cannot pass 511 bytes.
    public var maxUserIdBytes = 320
    /// The longest password (bytes of UTF-8), so that hashing cannot be made arbitrarily slow.
    public var maxPasswordBytes = 4_096
    /// The most changes (of details, password, user id; an upgrade) one account may make in one
    /// hour of the log's clock; nil for no limit. Counted from the account's own stream
    /// (``AccountState/changeBudget``), so the limit holds across processes and servers.
    public var changesPerAccountPerHour: Int? = 120
    /// The most bytes of values the changes of one account may write in one day of the log's
    /// clock (``ChangeBudget``); nil for no limit. With the change count, it bounds how fast one
    /// signed-in account can grow the log.
    public var changeBytesPerAccountPerDay: Int? = 2 << 20
    /// The most sessions one account keeps open; nil for no limit. A sign-in that would pass it
    /// ends the open sessions that expire first, in its own append (`auth.session-ended`, reason
    /// `session-limit`): the owner always gets in, and sign-ins repeated from anywhere cannot grow
    /// the account's state, which every request of the account reads, without bound.
    public var maxOpenSessionsPerAccount: Int? = 100

    /// Creates the default value.
    public init() {}
}

/// Options for an ``AccountStore``.
public struct AccountStoreOptions: Sendable {
    /// How appends reach the disk (default: flushed before an operation returns).
    public var sync: Durability = .durable
    /// Where the event log lives: nil for the store's own `log/` folder (the embedded LMDB log),
    /// else a folder path or a `file://` URL. The store's folder keeps the projections, the key
    /// vault and the lock wherever the log is. See ``LogLocation``.
    public var logLocation: String?
    /// The key changes over time, for reading old events (upcasting).
    public var evolution = SchemaEvolution()
    /// How new passwords are hashed: Argon2id at OWASP's first choice unless told otherwise.
    /// Stored hashes of the other algorithm, or below these parameters, are rehashed at the next
    /// successful login.
    public var passwordHashing: PasswordAlgorithm = .recommended
    /// scrypt parameters for new password hashes: setting them selects scrypt (reading them gives
    /// OWASP's scrypt minimum while ``passwordHashing`` is Argon2id).
    public var passwordParameters: ScryptParameters {
        get {
            if case let .scrypt(parameters) = passwordHashing { return parameters }
            return .owaspMinimum
        }
        set { passwordHashing = .scrypt(newValue) }
    }
    /// Allow parameters below OWASP's minimum (tests only).
    public var allowWeakPasswordParameters = false
    /// The hash parameters of the Firebase project whose users were imported
    /// (``AccountStore/importFirebaseUsers(_:parameters:context:progress:)``): their passwords are
    /// checked with Firebase's modified scrypt and rehashed on each one's first sign-in. The signer
    /// key is a secret of that project and is never written to the log.
    public var firebaseHashParameters: FirebaseHashParameters?
    /// Keys to decode besides the built-in and configured ones (values of other keys are kept as unknown).
    public var additionalKeys: [any AccountKey.Type] = []
    /// For a new store: seal personal data with per-account keys kept in `keys/vault`, destroyed on
    /// deletion (crypto-shredding). Off: everything is written in the clear. An existing store keeps
    /// the setting it was created with (recorded in its log); turning shredding on for a store
    /// created without it is the migration ``AccountStore/enableCryptoShredding(directory:progress:)``.
    public var cryptoShredding = true
    /// How the store's projections (the details cache, the external-details view) are kept: batch
    /// sizes, the catch-up batch of rebuilds and first builds, the read-your-writes timeout.
    public var projections = ProjectionStoreOptions()
    /// Read models of the app's own, kept by the store beside its built-in ones (the details
    /// cache, the external-details view, the look-alike index) and in the same way: each batch
    /// committed with its checkpoint, rebuilt from the log when its fingerprint changes or when
    /// asked (``AccountStore/rebuildProjection(_:progress:)``), read with
    /// ``AccountStore/readProjection(_:_:)`` once it has applied every command that returned
    /// before. Each needs a name of its own, not one of the built-in ones; a store opened without
    /// a projection keeps its databases, unused, until it is given it again. See
    /// <doc:AddingAProjection>.
    public var additionalProjections: [any Projection] = []
    /// Size limits per operation.
    public var limits = AccountStoreLimits()
    /// How password checks are throttled (see ``LoginThrottling``): by default five failures in a
    /// row lock the client that made them out of that user id for five minutes, and past 20
    /// failures of a user id its checks are spaced out, one every 2 s.
    public var loginThrottling = LoginThrottling()
    /// Failed logins in a row from one client that lock it out of a user id, and for how long:
    /// ``LoginThrottling/attemptsPerClient`` and ``LoginThrottling/lockDuration``.
    public var lockout: (attempts: Int, duration: Duration) {
        get { (loginThrottling.attemptsPerClient, loginThrottling.lockDuration) }
        set {
            loginThrottling.attemptsPerClient = max(1, newValue.attempts)
            loginThrottling.lockDuration = newValue.duration
        }
    }
    /// Password derivations (signups, logins, changes, resets) allowed to wait for the hashing
    /// threads at once; more are refused with ``AccountStoreError/overloaded(retryAfter:)``.
    /// Nil (the default): every caller waits its turn. A server facing the internet sets it
    /// (`accountctl serve` sets ``serverPasswordCheckQueue``), so that a flood of requests that
    /// hash is refused at once instead of queueing behind work no client waits for.
    public var maxQueuedPasswordChecks: Int?
    /// The queue bound `accountctl serve` sets: 16 derivations per core.
    public static var serverPasswordCheckQueue: Int { 16 * max(1, ProcessInfo.processInfo.activeProcessorCount) }
    /// The clock (inject a fixed one in tests).
    public var clock: @Sendable () -> Date = { Date() }
    /// How often a command retries when another writer changed the account between its read and
    /// its append (optimistic concurrency); after that it fails with `tooMuchContention`.
    public var maxConflictRetries = 64
    /// How long a password reset token stays valid.
    public var passwordResetValidity: Duration = .seconds(3_600)
    /// Delivers password reset tokens to their owners (by mail, say); without it a reset request
    /// is logged and its token dropped, with a warning. See
    /// ``AccountStore/requestPasswordReset(userId:context:)``.
    public var passwordResetDelivery: (@Sendable (PasswordResetRequest) async -> Void)?
    /// How long a signup confirmation token stays valid.
    public var signupConfirmationValidity: Duration = .seconds(24 * 3_600)
    /// Delivers signup confirmations and already-registered notices to the owners of user ids (by
    /// mail, say); ``AccountStore/requestSignup(_:context:)`` needs it. See
    /// ``SignupConfirmationMessage``.
    public var signupConfirmationDelivery: (@Sendable (SignupConfirmationMessage) async -> Void)?
    /// New account ids.
    public var makeAccountId: @Sendable () -> String = { UUID.random().uuidString.lowercased() }
    /// How many accounts' decoded states the store keeps in memory for its commands, logins and
    /// session checks (``AccountStore/authenticate(token:)``); each is brought up to date with the
    /// stream's newer events before use. 0 keeps none: every use starts from the details cache's
    /// entry (a read, its seal opened, a decoding). About 1–2 KiB each, and what is rendered from
    /// each state (``AccountStore/rendering(of:as:_:)``: the account server keeps its JSON answer,
    /// about as large again) is kept beside it.
    public var recentStates = 4_096
    /// Defences a test turns off and hooks it holds commands at (package access only).
    package var defences = DefenceSwitches()

    /// Creates the default value.
    public init() {}
}
